"""The look shared by the DOT writers (:mod:`~tpx_inspect.export.dot`, the folded view's
:mod:`~tpx_inspect.export.folded`): colours by node kind and status, the default status of
each node, DOT quoting."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tpx_inspect.records import Graph

KIND_COLOURS = {
    "leaf": "#d6eaf8",
    "param": "#d5f5e3",
    "op": "#f2f3f4",
    "loss": "#fdebd0",
    "scope": "#ebdef0",
    "stub": "#ffffff",
}
"""Fill colour of each node kind."""

STATUS_COLOURS = {
    "ok": "#566573",
    "unused": "#aab7b8",
    "warn": "#d4ac0d",
    "nonfinite": "#c0392b",
    "fail": "#c0392b",
}
"""Border colour of each node status, from best to worst."""

_RANK = {s: i for i, s in enumerate(STATUS_COLOURS)}


def node_status(graph: Graph) -> list[str]:
    """Default status per node: ``nonfinite`` (NaN/Inf in output or gradient), ``unused``
    (a backward graph whose backward did not run the node), else ``ok``. Read from the
    graph's tables, without building a record per node.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.asarray([0.0, 1.0], requires_grad=True)
    >>> node_status(tpx_inspect.trace(lambda: x.log().sum().backward()).graphs[0])
    ['nonfinite', 'nonfinite', 'nonfinite']
    """
    t = graph.tables
    bad = np.zeros(len(t.nodes), bool)
    counts = t.summaries[:, 5] + t.summaries[:, 6] if len(t.summaries) else np.zeros(0)
    for col in (0, 1):
        rows = t.nodes[:, col]
        has = rows >= 0
        bad[has] |= counts[rows[has]] > 0
    unused = (t.nodes[:, 2] < 0) if graph.kind == "backward" else np.zeros(len(bad), bool)
    return np.where(bad, "nonfinite", np.where(unused, "unused", "ok")).tolist()


def statuses_with(graph: Graph, status: Mapping[int, str] | None = None) -> list[str]:
    """:func:`node_status` of every node, with ``status`` (node id -> a status of
    :data:`STATUS_COLOURS`) overriding it; an unknown status is refused.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> statuses_with(tpx_inspect.trace(lambda: (x * 2).sum().backward()).graphs[0], {1: "fail"})
    ['ok', 'fail', 'ok']
    """
    statuses = node_status(graph)
    for i, s in (status or {}).items():
        if s not in STATUS_COLOURS:
            raise ValueError(
                f"unknown status {s!r} for node {i}; use one of {list(STATUS_COLOURS)}"
            )
        statuses[i] = s
    return statuses


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
