"""The node-by-node difference of two graphs (of one run or of two runs)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from tpx_inspect.server import models as m
from tpx_inspect.server import views
from tpx_inspect.server.deps import RUN_ID_PATTERN, Limit, Offset
from tpx_inspect.server.routers import jobs

router = APIRouter(prefix="/api", tags=["diff"])

RunQ = Annotated[str, Query(pattern=RUN_ID_PATTERN, description="run id")]
GraphQ = Annotated[int, Query(ge=0, le=10**9, description="graph id")]


@router.get("/diff", response_model=m.GraphDiff, responses={404: {"model": m.ErrorBody}})
async def diff(
    request: Request,
    run_a: RunQ,
    graph_a: GraphQ,
    run_b: RunQ,
    graph_b: GraphQ,
    offset: Offset = 0,
    limit: Limit = 200,
    changed: Annotated[bool, Query(description="list only nodes that differ")] = True,
) -> m.GraphDiff:
    """Graph A against graph B: structure changes, forward-value and gradient differences
    (max |a - b| when values are stored, else the difference of norms), saved bytes."""
    d = await jobs.wait(jobs.diff_job(request, run_a, graph_a, run_b, graph_b))
    return views.diff_model(f"{run_a}/{graph_a}", f"{run_b}/{graph_b}", d, offset, limit, changed)
