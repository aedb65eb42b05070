"""One graph: its summary, its nodes, one node's detail, the backward order, check results and
exports. Its layout at an expansion state is the view model's (``routers/viewmodel.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from tpx_inspect.checks.runner import GRAPH_CHECKS
from tpx_inspect.outputs import EXPORT_FORMATS, MEDIA_TYPES
from tpx_inspect.server import models as m
from tpx_inspect.server import views
from tpx_inspect.server.deps import (
    GraphId,
    Limit,
    NodeId,
    Offset,
    RunId,
    graph_for,
)
from tpx_inspect.server.routers import jobs
from tpx_inspect.server.store import UnknownId

router = APIRouter(prefix="/api/runs/{run_id}/graphs/{graph_id}", tags=["graphs"])
NOT_FOUND = {404: {"model": m.ErrorBody}}
SERVER_EXPORTS = ("dot", "svg", "png", "pdf", "json", "model-explorer", "html")
assert set(SERVER_EXPORTS) <= set(EXPORT_FORMATS)


@router.get("", response_model=m.GraphInfo, responses=NOT_FOUND)
def get_graph(request: Request, run_id: RunId, graph_id: GraphId) -> m.GraphInfo:
    """The summary of one graph."""
    _, _, g = graph_for(request, run_id, graph_id)
    return views.graph_info(run_id, graph_id, g)


@router.get("/nodes", response_model=m.NodeList, responses=NOT_FOUND)
def list_nodes(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    offset: Offset = 0,
    limit: Limit = 200,
    op: Annotated[str | None, Query(max_length=100)] = None,
    scope: Annotated[str | None, Query(max_length=500)] = None,
    source: Annotated[str | None, Query(max_length=500)] = None,
    kind: Annotated[Literal["leaf", "param", "op", "loss"] | None, Query()] = None,
) -> m.NodeList:
    """A page of the graph's nodes in id (topological) order, optionally filtered by op,
    scope (and below), source line (``file.py:12``, a line number or a file) and kind."""
    _, _, g = graph_for(request, run_id, graph_id)
    src: str | int | None = int(source) if source is not None and source.isdigit() else source
    ids = [n.id for n in g.find(scope=scope, op=op, source=src, kind=kind)]
    page = [views.node_info(g, i) for i in ids[offset : offset + limit]]
    return m.NodeList(
        run=run_id, graph=graph_id, page=m.Page(offset=offset, limit=limit, total=len(ids)),
        nodes=page,
    )  # fmt: skip


@router.get("/nodes/{node_id}", response_model=m.NodeDetail, responses=NOT_FOUND)
def get_node(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    node_id: NodeId,
    offset: Annotated[int, Query(ge=0, le=10**12, description="first value element")] = 0,
    limit: Annotated[int, Query(ge=0, le=65536, description="value elements per tensor")] = 256,
) -> m.NodeDetail:
    """One node in full: op, params, scope, source, inputs, consumers, saved values, output
    and gradient summaries, and up to ``limit`` elements of every stored value."""
    _, _, g = graph_for(request, run_id, graph_id)
    if node_id >= len(g.nodes):
        raise UnknownId(f"graph {graph_id} has no node {node_id} ({len(g.nodes)} nodes)")
    return views.node_detail(g, node_id, offset, limit)


@router.get("/backward", response_model=m.NodeList, responses=NOT_FOUND)
def backward_order(
    request: Request, run_id: RunId, graph_id: GraphId, offset: Offset = 0, limit: Limit = 200
) -> m.NodeList:
    """A page of the nodes in the order backward ran them."""
    _, _, g = graph_for(request, run_id, graph_id)
    order = g.order[offset : offset + limit]
    return m.NodeList(
        run=run_id, graph=graph_id, page=m.Page(offset=offset, limit=limit, total=len(g.order)),
        nodes=[views.node_info(g, i) for i in order],
    )  # fmt: skip


CheckName = Literal[GRAPH_CHECKS]  # type: ignore[valid-type]  # the check registry's names


@router.get("/checks", response_model=m.CheckReport, responses=NOT_FOUND)
async def get_checks(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    check: Annotated[list[CheckName], Query(description="checks to run (default: all)")] = [],  # noqa: B006
) -> m.CheckReport:
    """The graph checks on the saved values of this graph (no user code is imported or run:
    nodes whose values were not kept, and custom Function nodes, are skipped, and the report
    says why). Live verdicts recorded with ``tpx-inspect run --check`` fill in the Function
    nodes. Cached per graph."""
    # NOTE: a background job (bounded pool, shared by equal requests, result kept)
    return await jobs.wait(jobs.checks_job(request, run_id, graph_id, tuple(check) or GRAPH_CHECKS))


ExportFormat = Literal["dot", "svg", "png", "pdf", "json", "model-explorer", "html"]


@router.get(
    "/export",
    response_class=Response,
    responses={
        **NOT_FOUND,
        200: {
            "content": {MEDIA_TYPES[f]: {} for f in SERVER_EXPORTS},
            "description": "the graph in the format asked for",
        },
        409: {"model": m.ErrorBody, "description": "Graphviz missing or too slow"},
    },
)
async def export_graph(
    request: Request, run_id: RunId, graph_id: GraphId, format: ExportFormat = "dot"
) -> Response:
    """The graph as a file: DOT, SVG, PNG, PDF (these three need Graphviz), the trace JSON of
    this graph, Model Explorer JSON, or a self-contained HTML page."""
    data, media = await jobs.wait(jobs.export_job(request, run_id, graph_id, format))
    ext = {"model-explorer": "me.json"}.get(format, format)
    name = f"{run_id}-graph{graph_id}.{ext}"
    return Response(
        data, media_type=media, headers={"Content-Disposition": f'inline; filename="{name}"'}
    )
