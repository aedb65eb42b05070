"""Checks, diffs and exports as background jobs: the GET endpoints of graphs and diff wait
for them (one shared, cached run per distinct request, on a bounded pool); ``/api/jobs``
starts them without waiting, reports progress, hands out the result and cancels.

=========================================  ==========================================
``POST /api/jobs/checks?run=&graph=``      start the graph checks (``check`` repeated)
``POST /api/jobs/diff?run_a=&graph_a=...``  start a diff
``POST /api/jobs/export?run=&graph=&format=``  start an export
``GET /api/jobs/{job}``                    status, progress (0..1), the check running
``GET /api/jobs/{job}/result``             the result once done (409 before)
``DELETE /api/jobs/{job}``                 cancel
=========================================  ==========================================
"""

from __future__ import annotations

import asyncio
from concurrent.futures import CancelledError
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from tpx_inspect.checks import run_graph_checks, with_functions
from tpx_inspect.checks.functions import live_verdicts, merge_live
from tpx_inspect.checks.runner import GRAPH_CHECKS
from tpx_inspect.diff import diff_graphs
from tpx_inspect.outputs import export_bytes
from tpx_inspect.server import models as m
from tpx_inspect.server import views
from tpx_inspect.server.deps import RUN_ID_PATTERN, graph_for, settings_of
from tpx_inspect.server.jobs import Cancelled, Job, JobPool, result_of

router = APIRouter(prefix="/api/jobs", tags=["jobs"])

RunQ = Annotated[str, Query(pattern=RUN_ID_PATTERN, description="run id")]
GraphQ = Annotated[int, Query(ge=0, le=10**9, description="graph id")]
CheckName = Literal[GRAPH_CHECKS]  # type: ignore[valid-type]  # the runner's list, derived
ExportFormat = Literal["dot", "svg", "png", "pdf", "json", "model-explorer", "html"]
NOT_FOUND = {404: {"model": m.ErrorBody}}
JobId = Annotated[str, Path(max_length=40, description="a job id from POST /api/jobs/...")]


class JobInfo(BaseModel):
    """A background job: its status (queued, running, done, failed, cancelled), progress
    from 0 to 1, what it is doing now, its error when it failed, and where its result is."""

    id: str
    kind: str
    status: str
    progress: float
    note: str = ""
    error: str | None = None
    result: str


def jobs_of(request: Request) -> JobPool:
    """The app's job pool."""
    return request.app.state.jobs


def job_info(job: Job) -> JobInfo:
    """The :class:`JobInfo` model of a job."""
    error = None
    if job.status == "failed":
        exc = job.future.exception()
        error = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
    return JobInfo(id=job.id, kind=job.kind, status=job.status, progress=job.progress,
                   note=job.note, error=error, result=f"/api/jobs/{job.id}/result")  # fmt: skip


async def wait(job: Job) -> Any:
    """The job's result, awaited without blocking the event loop."""
    try:
        return await asyncio.wrap_future(job.future)
    except CancelledError:
        raise Cancelled(f"job {job.id} was cancelled") from None


def checks_job(request: Request, run_id: str, graph_id: int, names: tuple[str, ...]) -> Job:
    """The job running ``names`` on a graph (an answer model as its result)."""
    _, trace, g = graph_for(request, run_id, graph_id)

    def work(progress: Any) -> m.CheckReport:
        def step(name: str, k: int, total: int) -> None:
            progress(k, total, f"check {name}")

        report = run_graph_checks(with_functions(g, meta=trace.meta), names, progress=step)
        live = live_verdicts(trace.meta, g.id)  # verdicts of `run --check` for Function nodes
        return views.check_report(run_id, graph_id, merge_live(report, live, g), live)

    # NOTE: id(g) is in the key and the job holds g: a reloaded trace is a new job
    return jobs_of(request).submit(("checks", run_id, graph_id, id(g), names), "checks", work)


def diff_job(request: Request, run_a: str, graph_a: int, run_b: str, graph_b: int) -> Job:
    """The job diffing two graphs (a ``tpx_inspect.diff.GraphDiff`` as its result)."""
    _, _, a = graph_for(request, run_a, graph_a)
    _, _, b = graph_for(request, run_b, graph_b)
    key = ("diff", run_a, graph_a, id(a), run_b, graph_b, id(b))
    return jobs_of(request).submit(key, "diff", lambda progress: diff_graphs(a, b))


def export_job(request: Request, run_id: str, graph_id: int, fmt: str) -> Job:
    """The job writing a graph as ``fmt`` (``(bytes, media type)`` as its result)."""
    _, trace, g = graph_for(request, run_id, graph_id)
    timeout = max(settings_of(request).layout_timeout, 10.0)

    def work(progress: Any) -> tuple[bytes, str]:
        return export_bytes(trace, g, fmt, timeout=timeout)

    return jobs_of(request).submit(("export", run_id, graph_id, id(g), fmt), "export", work)


@router.post("/checks", response_model=JobInfo, status_code=202, responses=NOT_FOUND)
def start_checks(
    request: Request,
    run: RunQ,
    graph: GraphQ,
    check: Annotated[list[CheckName], Query(description="checks to run (default: all)")] = [],  # noqa: B006
) -> JobInfo:
    """Start the graph checks of a graph in the background."""
    return job_info(checks_job(request, run, graph, tuple(check) or GRAPH_CHECKS))


@router.post("/diff", response_model=JobInfo, status_code=202, responses=NOT_FOUND)
def start_diff(request: Request, run_a: RunQ, graph_a: GraphQ, run_b: RunQ, graph_b: GraphQ):
    """Start a diff of graph A against graph B in the background."""
    return job_info(diff_job(request, run_a, graph_a, run_b, graph_b))


@router.post("/export", response_model=JobInfo, status_code=202, responses=NOT_FOUND)
def start_export(request: Request, run: RunQ, graph: GraphQ, format: ExportFormat = "dot"):
    """Start an export of a graph in the background."""
    return job_info(export_job(request, run, graph, format))


@router.get("/{job_id}", response_model=JobInfo, responses=NOT_FOUND)
def get_job(request: Request, job_id: JobId) -> JobInfo:
    """A job's status and progress."""
    return job_info(jobs_of(request).get(job_id))


@router.delete("/{job_id}", response_model=JobInfo, responses=NOT_FOUND)
def cancel_job(request: Request, job_id: JobId) -> JobInfo:
    """Cancel a job (a running check stops before its next check)."""
    return job_info(jobs_of(request).cancel(job_id))


@router.get(
    "/{job_id}/result",
    responses={**NOT_FOUND, 409: {"model": m.ErrorBody, "description": "not done yet"},
               200: {"content": {"application/json": {}, "image/svg+xml": {}}}},
)  # fmt: skip
def job_result(
    request: Request,
    job_id: JobId,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> Response:
    """The result of a finished job: the check report, a page of the diff, or the file."""
    job = jobs_of(request).get(job_id)
    if job.status in ("queued", "running"):
        return JSONResponse({"detail": f"job {job_id} is {job.status}"}, status_code=409)
    out = result_of(job)
    if job.kind == "export":
        return Response(out[0], media_type=out[1])
    if job.kind == "diff":
        _, run_a, graph_a, _, run_b, graph_b, _ = job.key
        out = views.diff_model(f"{run_a}/{graph_a}", f"{run_b}/{graph_b}", out, offset, limit, True)
    return JSONResponse(out.model_dump(mode="json"))
