"""Pure functions from trace records to the response models (no I/O, no FastAPI).

>>> import tpx as tp, tpx_inspect
>>> with tpx_inspect.capture(timing=False) as cap:
...     x = tp.ones(3, requires_grad=True)
...     (x * 2).sum().backward()
>>> g = cap.trace.graphs[0]
>>> info = graph_info("demo", 0, g)
>>> info.nodes, info.edges, info.finite
(3, 2, True)
>>> node_info(g, 2).title, node_info(g, 2).grad_norm
('sum', 1.0)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from tpx_inspect.diff import GraphDiff as DiffRecord
from tpx_inspect.records import Graph, Run
from tpx_inspect.server import models as m
from tpx_inspect.summary import TensorSummary
from tpx_inspect.viewmodel.listing import graph_facts, node_column, nonfinite, nonfinite_mask

__all__ = [
    "check_report",
    "diff_model",
    "graph_info",
    "node_column",
    "node_detail",
    "node_info",
    "nonfinite_mask",
    "run_info",
    "summary",
    "values",
]


def run_info(run_id: str, runs: tuple[Run, ...], live: bool) -> m.RunInfo:
    """The :class:`RunInfo` of a trace's captures (usually one)."""
    status = "running" if any(r.status == "running" for r in runs) else "ok"
    errors = [f"{r.error.type}: {r.error.message}" for r in runs if r.error is not None]
    if errors:
        status = "error"
    name = runs[0].name if runs else run_id
    graphs = sum(len(r.graphs) for r in runs)
    steps = sum(r.steps for r in runs)
    return m.RunInfo(
        id=run_id, name=name, status=status, live=live, graphs=graphs, steps=steps,
        error=errors[0] if errors else None,
    )  # fmt: skip


_FACTS: OrderedDict[int, tuple[Graph, dict[str, Any]]] = OrderedDict()
_FACTS_LOCK = threading.Lock()


def _facts(g: Graph) -> dict[str, Any]:
    """``listing.graph_facts`` of ``g``, computed once per loaded graph (a 100k-node graph
    takes ~45 ms; the graph list is asked for often). The entry holds ``g``: its id stays its."""
    with _FACTS_LOCK:
        hit = _FACTS.get(id(g))
    if hit is None or hit[0] is not g:
        hit = (g, graph_facts(g))
        with _FACTS_LOCK:
            _FACTS[id(g)] = hit
            while len(_FACTS) > 64:
                _FACTS.popitem(last=False)
    return hit[1]


def graph_info(run_id: str, graph_id: int, g: Graph) -> m.GraphInfo:
    """The :class:`GraphInfo` of graph ``g`` (id ``graph_id`` in its run)."""
    return m.GraphInfo(id=graph_id, run=run_id, **_facts(g))


def summary(s: TensorSummary | None) -> m.Summary | None:
    """A :class:`Summary` model of a tensor summary (NaN/Inf as strings)."""
    if s is None:
        return None
    return m.Summary(
        shape=list(s.shape), dtype=s.dtype, min=m.number(s.min), max=m.number(s.max),
        mean=m.number(s.mean), std=m.number(s.std), norm=m.number(s.norm), nan=s.nan,
        inf=s.inf, zeros=s.zeros, preview=[m.number(v) for v in s.preview],
        has_value=s.value is not None,
    )  # fmt: skip


def values(a: np.ndarray | None, offset: int = 0, limit: int = 1024) -> m.Values | None:
    """``limit`` elements of a full value from ``offset`` (C order), JSON-safe.

    >>> v = values(np.array([[1.0, np.nan], [np.inf, 4.0]]), offset=1, limit=2)
    >>> v.data, v.total, v.truncated
    (['nan', 'inf'], 4, True)
    """
    if a is None:
        return None
    flat = np.asarray(a).reshape(-1)
    part = flat[offset : offset + limit]
    data = [m.number(v) for v in part.tolist()] if part.dtype.kind in "fiub" else []
    return m.Values(
        shape=list(a.shape), dtype=str(a.dtype), offset=offset, data=data, total=int(flat.size),
        truncated=offset + limit < flat.size,
    )  # fmt: skip


def node_info(g: Graph, i: int) -> m.NodeInfo:
    """The :class:`NodeInfo` of node ``i`` of ``g``."""
    n, st = g.node(i), g.stats[i]
    return m.NodeInfo(
        id=n.id, **m.node_columns(n), title=n.title, saved_bytes=n.saved_bytes, order=st.order,
        grad_norm=None if st.grad is None else m.number(st.grad.norm),
        forward_seconds=st.forward_seconds, backward_seconds=st.backward_seconds,
        nonfinite=nonfinite(st.output) or nonfinite(st.grad),
    )  # fmt: skip


def node_detail(g: Graph, i: int, offset: int = 0, limit: int = 1024) -> m.NodeDetail:
    """Everything about node ``i``, with up to ``limit`` elements of each stored value."""
    n, st = g.node(i), g.stats[i]
    vals: dict[str, m.Values | None] = {}
    if g.detail == "full":
        nv = g.node_values(i)
        vals["output"] = values(nv.output, offset, limit)
        vals["grad"] = values(nv.grad, offset, limit)
        for k, a in enumerate(nv.inputs):
            vals[f"input.{k}"] = values(a, offset, limit)
        for k, a in enumerate(nv.grads_out):
            vals[f"grad_out.{k}"] = values(a, offset, limit)
    return m.NodeDetail(
        node=node_info(g, i), params=_jsonable(n.params), consumers=[c.id for c in g.consumers(i)],
        saved=[m.SavedInfo(slot=s.slot, shape=list(s.shape), dtype=s.dtype, bytes=s.bytes)
               for s in n.saved],
        released=st.released, output=summary(st.output), grad=summary(st.grad),
        grads_out=[summary(s) for s in st.grads_out], consts=[summary(s) for s in st.consts],
        values=vals,
    )  # fmt: skip


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, float):
        return m.number(x)
    if x is None or isinstance(x, bool | int | str):
        return x
    return repr(x)


def diff_model(a: str, b: str, d: DiffRecord, offset: int, limit: int, only_changed: bool):
    """The :class:`GraphDiff` model of a diff, one page of its nodes."""
    rows = [n for n in d.nodes if n.changed] if only_changed else list(d.nodes)
    page = rows[offset : offset + limit]
    return m.GraphDiff(
        a=a, b=b, same_structure=d.same_structure, nodes_a=d.nodes_a, nodes_b=d.nodes_b,
        added=d.count("added"), removed=d.count("removed"),
        changed=sum(n.changed for n in d.nodes),
        max_output_diff=m.number(d.max_diff("output")), max_grad_diff=m.number(d.max_diff("grad")),
        peak_saved_bytes_a=d.peak_saved_bytes_a, peak_saved_bytes_b=d.peak_saved_bytes_b,
        page=m.Page(offset=offset, limit=limit, total=len(rows)),
        nodes=[m.NodeChange(id=n.id, id_b=n.id_b, status=n.status, changes=list(n.changes),
                            output_diff=m.number(n.output_diff), grad_diff=m.number(n.grad_diff),
                            saved_bytes_a=n.saved_bytes_a, saved_bytes_b=n.saved_bytes_b)
               for n in page],
    )  # fmt: skip


def check_report(run_id: str, graph_id: int, report: Any, live: Any = ()) -> m.CheckReport:
    """The :class:`CheckReport` model of a ``tpx_inspect.checks.Report``: statuses, summaries
    and reasons come from the report itself, as the CLI's do."""
    checks = [
        m.CheckInfo(
            name=r.check, status=r.status.value, summary=r.summary(), checked=r.checked,
            skipped=r.skipped,
            reasons=[m.SkipReason(reason=why, count=len(nodes),
                                  nodes=[n for n in nodes if n is not None])
                     for why, nodes in r.reasons()],
            findings=[
                m.Finding(check=f.category, node=f.node, message=f.message,
                          details=_jsonable(dict(f.details)))
                for f in r.findings[:200]
            ],
        )
        for r in report.results
    ]  # fmt: skip
    verdicts = [m.NodeVerdict(node=n, check="local", status=st, message=msg)
                for n, st, msg in live]  # fmt: skip
    return m.CheckReport(run=run_id, graph=graph_id, ok=report.passed,
                         status=report.status.value, headline=report.headline(),
                         checks=checks, live=verdicts)  # fmt: skip
