"""The view-model endpoints (see /work/notes/i14-api.md and ``tpx_inspect.viewmodel``): the
group tree, the layout of an expansion state (sent in the request body, named by a short key),
records on demand, server-side search and colour statistics, heatmaps and histograms of values.

Big answers are written with ``json.dumps`` straight into the response (no per-item pydantic
validation: a fully expanded 20,000-node layout has tens of thousands of boxes).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from typing import Annotated, Any, Literal

import numpy as np
from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, Field

from tpx_inspect._json import dumps
from tpx_inspect.records import Graph
from tpx_inspect.server import cold
from tpx_inspect.server import models as m
from tpx_inspect.server.deps import GraphId, NodeId, RunId, cache_of, graph_for
from tpx_inspect.server.store import UnknownId
from tpx_inspect.server.vm_store import (  # noqa: F401  (Models: the app makes one)
    PREPARE_WAIT,
    Models,
    States,
    collector_quiet,
    whole,
)
from tpx_inspect.viewmodel import ViewModel, wire
from tpx_inspect.viewmodel import values as vals
from tpx_inspect.viewmodel._index import TreeIndex, index_of
from tpx_inspect.viewmodel.layout import Arranged
from tpx_inspect.viewmodel.region import locate, region_json

router = APIRouter(prefix="/api/runs/{run_id}/graphs/{graph_id}", tags=["view model"])
log = logging.getLogger("tpx_inspect.server")
NOT_FOUND = {404: {"model": m.ErrorBody}}


class Viewport(BaseModel):
    """A rectangle of the layout, in points (top-left corner and size)."""

    x: float
    y: float
    w: float = Field(gt=0)
    h: float = Field(gt=0)


class LayoutRequest(BaseModel):
    """An expansion state: ``expanded`` group ids (None: the first screen's), or every group
    (``expand_all``), or every group down to ``depth``; ``viewport`` and ``min_size`` trim
    the answer (see ``tpx_inspect.viewmodel.wire.layout_json``)."""

    expanded: list[Annotated[str, Field(max_length=500)]] | None = Field(None, max_length=200_000)
    expand_all: bool = False
    depth: int | None = Field(None, ge=0, le=64)
    viewport: Viewport | None = None
    min_size: float = Field(0.0, ge=0)


def _json(doc: Any) -> Response:
    return Response(json.dumps(doc, separators=(",", ":")).encode(), media_type="application/json")


def _bytes(body: bytes) -> Response:
    return Response(body, media_type="application/json")


def view_model(request: Request, run_id: str, graph_id: int) -> tuple[Graph, ViewModel]:
    """The graph and its view model (built once per loaded graph, kept)."""
    entry, _, g = graph_for(request, run_id, graph_id)
    kept = None if entry.live or entry.path is None else (entry.path, graph_id)
    return g, request.app.state.vm_models.get((run_id, graph_id, id(g)), g, kept)


def _states(request: Request) -> States:
    return request.app.state.vm_states


def _expanded(vm: ViewModel, body: LayoutRequest) -> tuple[tuple[str, ...], list[str]]:
    if body.expand_all:  # NOTE: sorted as below: the same state, key and cache entry as by name
        return tuple(sorted(vm.groups)), []
    asked = list(vm.default_expanded) if body.expanded is None else list(body.expanded)
    unknown = [g for g in asked if g not in vm.groups]
    chosen = {g for g in asked if g in vm.groups} | {"root"}
    if body.depth is not None:
        chosen |= {g.id for g in vm.groups.values() if g.depth < body.depth}
    return tuple(sorted(chosen)), unknown


def _arranged(request: Request, run_id: str, graph_id: int, g: Graph, vm: ViewModel, exp) -> tuple:
    """The state ``exp`` routed and placed (cached per state): a region of it, or where an
    item is, is then cheap; the whole layout is composed only when asked."""
    preparing = vm.memo.get("preparing")
    if preparing is not None:  # NOTE: the states arranged ahead are being made: wait for them
        preparing.wait(PREPARE_WAIT)
    ready = vm.memo.get("ready", {}).get(exp)  # NOTE: arranged ahead (layout.prepare)
    if ready is not None:
        return ready, True
    key = ("arranged", run_id, graph_id, id(g), exp)
    cache = cache_of(request)
    hit = cache.get(key)
    if hit is not None:
        return hit[0], True  # type: ignore[index]
    with collector_quiet(len(vm.owner)):
        arr = Arranged(vm, exp)
    cache.put(key, (arr, g))
    return arr, False


def _answer(request, run_id, graph_id, body: LayoutRequest) -> bytes:
    t0 = time.perf_counter()
    named = not body.expand_all and body.depth is None
    if named and body.viewport is None and not body.min_size:
        kept = cold.first_kept(request, run_id, graph_id, body.expanded)
        if kept is not None:
            exp, every, blob = kept
            key = _states(request).put(run_id, graph_id, tuple(exp))
            head = {"run": run_id, "graph": graph_id, "key": key, "expanded": exp,
                    "expand_all": every, "unknown": [], "cached": True,
                    "seconds": round(time.perf_counter() - t0, 4)}  # fmt: skip
            return dumps(head)[:-2] + b"," + blob[1:]
    g, vm = view_model(request, run_id, graph_id)
    exp, unknown = _expanded(vm, body)
    arr, cached = _arranged(request, run_id, graph_id, g, vm, exp)
    vp = body.viewport
    entire = vp is None and not body.min_size
    every = len(exp) == len(vm.groups)  # NOTE: a region of it need not list 17k group ids
    head = {
        "run": run_id, "graph": graph_id, "key": _states(request).put(run_id, graph_id, exp),
        "expanded": list(exp) if entire or not every else None, "expand_all": every,
        "unknown": unknown, "cached": cached,
    }  # fmt: skip
    if entire:
        body_bytes = whole(arr, len(vm.owner))
    else:  # NOTE: only what meets the viewport is composed (see viewmodel.region)
        rect = None if vp is None else (vp.x, vp.y, vp.w, vp.h)
        body_bytes = dumps(region_json(arr, rect, body.min_size))
    head["seconds"] = round(time.perf_counter() - t0, 4)
    return dumps(head)[:-2] + b"," + body_bytes[1:]  # NOTE: two JSON objects' fields joined


@router.get("/tree", responses=NOT_FOUND)
async def get_tree(request: Request, run_id: RunId, graph_id: GraphId) -> Response:
    """The view model's groups (scopes, repeats "xN", loops, parameter groups) with stable
    ids, children in drawing order, sizes, and the groups the first screen opens."""

    def answer() -> bytes:
        _, vm = view_model(request, run_id, graph_id)
        return dumps({"run": run_id, "graph": graph_id, **wire.tree_json(vm)})

    return _bytes(await run_in_threadpool(answer))


@router.post("/layout", responses=NOT_FOUND)
async def post_layout(
    request: Request, run_id: RunId, graph_id: GraphId, body: LayoutRequest
) -> Response:
    """The layout of an expansion state: boxes (nodes, collapsed groups, input stubs), frames
    (expanded groups), edges; ``key`` names the state for ``GET .../layout?key=``."""
    return _bytes(await run_in_threadpool(_answer, request, run_id, graph_id, body))


_NUMBER = r"-?\d{1,12}(\.\d{1,6})?"
_VIEWPORT = rf"^{_NUMBER}(,{_NUMBER}){{3}}$"


@router.get("/layout", responses=NOT_FOUND)
async def get_layout(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    key: Annotated[
        str | None, Query(max_length=40, description="a state key; none: first screen")
    ] = None,
    viewport: Annotated[
        str | None, Query(max_length=100, pattern=_VIEWPORT, description="x,y,w,h (w, h > 0)")
    ] = None,
    min_size: Annotated[float, Query(ge=0)] = 0.0,
) -> Response:
    """The layout of the state named ``key`` (from an earlier POST), or of the first screen."""
    exp = None if key is None else list(_states(request).get(key, run_id, graph_id))
    vp = None
    if viewport:
        x, y, w, h = (float(v) for v in viewport.split(","))
        if not (w > 0 and h > 0):
            raise HTTPException(422, f"viewport {viewport!r}: width and height must be > 0")
        vp = Viewport(x=x, y=y, w=w, h=h)
    body = LayoutRequest(expanded=exp, viewport=vp, min_size=min_size)
    return _bytes(await run_in_threadpool(_answer, request, run_id, graph_id, body))


@router.get("/locate", responses=NOT_FOUND)
def get_locate(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    node: Annotated[int | None, Query(ge=0, le=10**9, description="a node id")] = None,
    box: Annotated[str | None, Query(max_length=500, description="a box or frame id")] = None,
    key: Annotated[
        str | None, Query(max_length=40, description="a state; none: first screen")
    ] = None,
) -> Response:
    """Where node ``node`` (or the item ``box``) is drawn in state ``key``: the id of the box
    showing it (itself, or the outermost collapsed group holding it), the open frames around
    it (outermost first), and its centre and size, without sending the layout."""
    if (node is None) == (box is None):
        raise HTTPException(422, "give one of node= or box=")
    g, vm = view_model(request, run_id, graph_id)
    exp = vm.default_expanded if key is None else _states(request).get(key, run_id, graph_id)
    exp, _ = _expanded(vm, LayoutRequest(expanded=list(exp)))
    arr, _ = _arranged(request, run_id, graph_id, g, vm, exp)
    try:
        where = locate(arr, node=node, box=box)
    except KeyError as exc:
        raise UnknownId(f"graph {graph_id}: {exc.args[0]}") from None
    return _json({"node": node, "key": _states(request).put(run_id, graph_id, exp), **where})


def _shown(request, run_id, graph_id, key: str | None) -> tuple[TreeIndex, Any]:
    """The view model's tree index and which groups are open and shown in state ``key``."""
    _, vm = view_model(request, run_id, graph_id)
    exp = vm.default_expanded if key is None else _states(request).get(key, run_id, graph_id)
    ix = index_of(vm)
    return ix, ix.shown(exp)


class RecordsRequest(BaseModel):
    """Node ids (at most 5000) and the fields wanted (None: all)."""

    ids: list[Annotated[int, Field(ge=0)]] = Field(max_length=5000)
    fields: list[str] | None = None


@router.post("/records", responses=NOT_FOUND)
def post_records(
    request: Request, run_id: RunId, graph_id: GraphId, body: RecordsRequest
) -> Response:
    """Fields of some nodes, as columns (``ids`` first)."""
    _, vm = view_model(request, run_id, graph_id)
    bad = [i for i in body.ids if i >= len(vm.owner)]
    if bad:
        raise UnknownId(f"graph {graph_id} has no node {bad[0]} ({len(vm.owner)} nodes)")
    try:
        doc = wire.records(vm, body.ids, body.fields or wire.RECORD_FIELDS)
    except ValueError as exc:
        raise UnknownId(str(exc)) from None
    return _json(doc)


@router.get("/search", responses=NOT_FOUND)
def get_search(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    q: Annotated[str, Query(max_length=200, description="text, or op:/scope:/source:/label:")],
    key: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=0, le=100_000)] = 1000,
) -> Response:
    """Nodes matching ``q`` (server-side), and how many hits each visible box of state
    ``key`` (default: the first screen) holds."""
    kept = cold.kept(request, run_id, graph_id)
    if kept is not None:  # NOTE: the trace is not read yet: the fields kept beside it
        hits = kept.search(q)
        exp = kept.default_expanded if key is None else _states(request).get(key, run_id, graph_id)
        boxes = Counter(kept.boxes(exp, hits))
    else:
        _, vm = view_model(request, run_id, graph_id)
        hits = wire.search(vm, q)
        ix, shown = _shown(request, run_id, graph_id, key)
        boxes = Counter(ix.boxes(shown, np.asarray(hits, np.int64)))
    return _json({"q": q, "total": len(hits), "nodes": hits[:limit], "boxes": dict(boxes)})


Metric = Literal[tuple(vals.METRICS)]  # type: ignore[valid-type]


@router.get("/colours", responses=NOT_FOUND)
def get_colours(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    metric: Metric = "grad_norm",
    key: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    """A metric per visible box of state ``key`` (a group: the largest of its nodes), with
    its unit and scale (min, max, smallest positive, whether log reads better)."""
    g, _ = view_model(request, run_id, graph_id)
    v = vals.metric(g, metric)
    ix, shown = _shown(request, run_id, graph_id, key)
    best = wire.box_values(ix.box_codes(shown), np.asarray(v, np.float64))
    return _json({"metric": metric, "unit": vals.METRICS[metric], **vals.scale(v),
                  "boxes": {ix.item(k): x for k, x in best.items()}})  # fmt: skip


Which = Annotated[str, Query(pattern=r"^(output|grad|(input|grad_out|saved)\.\d{1,4})$")]


@router.get("/nodes/{node_id}/heatmap", responses=NOT_FOUND)
def get_heatmap(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    node_id: NodeId,
    which: Which = "output",
    max: Annotated[int, Query(ge=1, le=1024)] = 128,
) -> Response:
    """A value of a node as a 2-D grid (1-D: one row; N-D: leading dims as rows),
    block-averaged past ``max`` per side; 409 when the value was not kept."""
    a = vals.node_value(_graph_node(request, run_id, graph_id, node_id), node_id, which)
    return _json({"which": which, "dtype": str(a.dtype), **vals.heatmap(a, max)})


@router.get("/nodes/{node_id}/histogram", responses=NOT_FOUND)
def get_histogram(
    request: Request,
    run_id: RunId,
    graph_id: GraphId,
    node_id: NodeId,
    which: Which = "output",
    bins: Annotated[int, Query(ge=1, le=1000)] = 40,
    log: bool = False,
) -> Response:
    """A histogram of a node's value (``log``: of log10|x|); 409 when not kept."""
    a = vals.node_value(_graph_node(request, run_id, graph_id, node_id), node_id, which)
    return _json({"which": which, "dtype": str(a.dtype), **vals.histogram(a, bins, log)})


@router.get("/nodes/{node_id}/saved", responses=NOT_FOUND)
def get_saved(request: Request, run_id: RunId, graph_id: GraphId, node_id: NodeId) -> Response:
    """The values a node saved for backward: slot, shape, dtype, bytes, whether the value
    was kept, and its summary statistics when it was."""
    return _json(vals.saved(_graph_node(request, run_id, graph_id, node_id), node_id))


def _graph_node(request: Request, run_id: str, graph_id: int, node_id: int) -> Graph:
    _, _, g = graph_for(request, run_id, graph_id)
    if node_id >= len(g.nodes):
        raise UnknownId(f"graph {graph_id} has no node {node_id} ({len(g.nodes)} nodes)")
    return g
