"""Runs, the graphs of a run, and the live feed (long polling and server-sent events)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from tpx_inspect.errors import TraceFormatError
from tpx_inspect.format import read_header
from tpx_inspect.server import models as m
from tpx_inspect.server import views
from tpx_inspect.server.deps import Limit, Offset, RunId, run_for, store_of
from tpx_inspect.server.store import RunEntry, _stamp, inside
from tpx_inspect.viewmodel import persist

router = APIRouter(prefix="/api/runs", tags=["runs"])

POLL_SECONDS = 0.1


def _info(entry: RunEntry) -> m.RunInfo:
    try:
        trace = entry.trace()
    except TraceFormatError as exc:
        return m.RunInfo(
            id=entry.id, name=entry.id, status="unreadable", live=False, graphs=0, steps=0,
            error=str(exc).splitlines()[0],
        )  # fmt: skip
    return views.run_info(entry.id, trace.runs, entry.live)


@router.get("", response_model=list[m.RunInfo], summary="Every run the server knows")
def list_runs(request: Request) -> list[m.RunInfo]:
    """The runs, rescanning the served folders for runs written since the last request. A run
    on disk that was not opened yet is described by its trace's header (``read_header``: no
    node columns read, the sidecar only checked against its recorded size and SHA-256); a
    trace damaged past that shows once opened."""
    store = store_of(request)
    store.rescan()
    return [listed(store.get(rid)) for rid in store.ids()]


def listed(entry: RunEntry) -> m.RunInfo:
    """The run as the run list shows it (from its trace's header when not read yet; kept
    per file stamp)."""
    if entry.path is None:
        return _info(entry)
    stamp = _stamp(entry.path)
    if entry._cache[0] == stamp and stamp is not None:  # NOTE: loaded already: its verdict
        return _info(entry)
    return _header_info(entry.id, str(entry.path), entry.root, stamp)


@lru_cache(maxsize=1024)
def _header_info(run_id: str, path: str, root: Path | None, stamp: object) -> m.RunInfo:
    """What ``_info`` answers for the run, from the header of its trace (the same messages
    as ``store._load`` for a trace that cannot be read)."""
    if root is not None and not inside(Path(path), root):
        error = f"{path}: refused: it resolves outside the served folder {root}"
    else:
        try:
            head = read_header(path, check_sidecar=True)
            return views.run_info(run_id, head.runs, False)  # type: ignore[arg-type]
        except TraceFormatError as exc:
            error = str(exc)
        except OSError as exc:
            error = f"{path}: {exc.strerror or exc}"
        except Exception as exc:  # NOTE: one run's bug must not break the others' listing
            error = f"{path}: unreadable ({type(exc).__name__})"
    return m.RunInfo(
        id=run_id, name=run_id, status="unreadable", live=False, graphs=0, steps=0,
        error=error.splitlines()[0],
    )  # fmt: skip


@router.get("/{run_id}", response_model=m.RunInfo, responses={404: {"model": m.ErrorBody}})
def get_run(request: Request, run_id: RunId) -> m.RunInfo:
    """One run: its status, graph and step counts, and the error that ended it, if any."""
    return _info(run_for(request, run_id))


@router.get("/{run_id}/graphs", response_model=m.GraphList, responses={404: {"model": m.ErrorBody}})
def list_graphs(request: Request, run_id: RunId, offset: Offset = 0, limit: Limit = 200):
    """A page of the graphs of a run (one per kept backward step). A run on disk not read yet
    is listed from beside its trace when ``tpx-inspect run`` kept its graph list there
    (``viewmodel.persist.graph_list``: no trace read), else from its trace."""
    entry = run_for(request, run_id)
    kept = _kept_list(entry)
    if kept is not None:
        total, info = len(kept), lambda i: m.GraphInfo(id=i, run=run_id, **kept[i])
    else:
        graphs = entry.trace().graphs
        total, info = len(graphs), lambda i: views.graph_info(run_id, i, graphs[i])
    page = [info(i) for i in range(offset, min(total, offset + limit))]
    return m.GraphList(
        run=run_id, page=m.Page(offset=offset, limit=limit, total=total), graphs=page
    )


def _kept_list(entry: RunEntry) -> list[dict] | None:
    """The graph list kept beside a trace not read yet (None: live, loaded or not kept)."""
    if entry.live or entry.path is None or entry.loaded:
        return None
    return persist.graph_list(entry.path)


@router.get("/{run_id}/plans", responses={404: {"model": m.ErrorBody}})
def list_plans(request: Request, run_id: RunId) -> dict:
    """The ``tpx.compile`` plans stored with a run (``tpx_inspect.capture_plan``), each kernel
    linked to the captured graph and node it came from; empty for most runs."""
    from tpx_inspect.plans import plans_view

    return {"run": run_id, "plans": plans_view(run_for(request, run_id).trace())}


def _feed(entry: RunEntry, since: int) -> m.Feed:
    trace = entry.trace()
    graphs = trace.graphs
    new = [views.graph_info(entry.id, i, graphs[i]) for i in range(since, len(graphs))][:100]
    status = views.run_info(entry.id, trace.runs, entry.live).status
    return m.Feed(run=entry.id, status=status, graphs=len(graphs), new=new)


Since = Annotated[int, Query(ge=0, le=10**9, description="graphs the viewer already has")]


@router.get("/{run_id}/feed", response_model=m.Feed, responses={404: {"model": m.ErrorBody}})
async def feed(
    request: Request,
    run_id: RunId,
    since: Since = 0,
    wait: Annotated[float, Query(ge=0, le=30, description="seconds to wait for news")] = 0,
) -> m.Feed:
    """Long polling: answers as soon as the run has more than ``since`` graphs or has ended,
    or after ``wait`` seconds with no news."""
    entry = run_for(request, run_id)
    deadline = time.monotonic() + wait
    while True:
        out = _feed(entry, since)
        if out.new or out.status != "running" or time.monotonic() >= deadline:
            return out
        await asyncio.sleep(POLL_SECONDS)


@router.get(
    "/{run_id}/events",
    responses={200: {"content": {"text/event-stream": {}}}, 404: {"model": m.ErrorBody}},
)
async def events(
    request: Request,
    run_id: RunId,
    since: Since = 0,
    timeout: Annotated[float, Query(ge=0, le=600, description="close the stream after")] = 60,
) -> StreamingResponse:
    """Server-sent events: one ``graph`` event per new graph, ``status`` when the run ends;
    the stream closes once the run has ended and every graph was sent, or after ``timeout``."""
    entry = run_for(request, run_id)
    return StreamingResponse(
        _stream(request, entry, since, timeout), media_type="text/event-stream"
    )


async def _stream(
    request: Request, entry: RunEntry, since: int, timeout: float
) -> AsyncIterator[str]:
    deadline = time.monotonic() + timeout
    seen = since
    while True:
        out = _feed(entry, seen)
        for g in out.new:
            yield f"event: graph\ndata: {g.model_dump_json()}\n\n"
        seen += len(out.new)
        ended = out.status != "running" and len(out.new) < 100
        if ended or time.monotonic() >= deadline or await request.is_disconnected():
            yield f"event: status\ndata: {json.dumps({'status': out.status, 'graphs': seen})}\n\n"
            return
        await asyncio.sleep(POLL_SECONDS)
