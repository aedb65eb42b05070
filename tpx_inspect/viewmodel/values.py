"""Numbers for the viewer's overlays, computed where the data is: per-node metrics (colour
statistics), heatmaps of a value (block-averaged past a size) and histograms.

>>> import numpy as np
>>> h = heatmap(np.arange(12.0).reshape(3, 4), max_side=2)
>>> h["rows"], h["cols"], h["block"], h["data"]
(2, 2, [2, 2], [[2.5, 4.5], [8.5, 10.5]])
>>> histogram(np.array([0.0, 1.0, 1.0, 2.0]), bins=2)["counts"]
[1, 3]
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from tpx_inspect.errors import InspectError
from tpx_inspect.records import NODE_COLUMNS, SUMMARY_COLUMNS, TIME_COLUMNS, Graph

__all__ = [
    "METRICS", "ValueNotKeptError", "heatmap", "histogram", "metric", "node_value", "number",
    "saved", "scale",
]  # fmt: skip

METRICS = {
    "grad_norm": "|grad| (L2 norm)",
    "output_norm": "|output| (L2 norm)",
    "forward_seconds": "s (forward)",
    "backward_seconds": "s (backward)",
    "saved_bytes": "bytes saved for backward",
    "nonfinite": "NaN/Inf count (output + grad)",
    "order": "backward position",
}
"""Per-node metrics the viewer can colour by, with their unit."""


def number(x: float) -> float | str:
    """A JSON-safe number: NaN and infinities as the strings ``nan``, ``inf``, ``-inf``.

    >>> number(float("nan")), number(2.0)
    ('nan', 2.0)
    """
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _summary_col(g: Graph, which: str, col: str) -> np.ndarray:
    rows = g.tables.nodes[:, NODE_COLUMNS.index(which)].astype(np.int64)
    out = np.full(len(rows), np.nan)
    if len(g.tables.summaries):
        has = rows >= 0
        out[has] = g.tables.summaries[rows[has], SUMMARY_COLUMNS.index(col)]
    return out


def metric(g: Graph, name: str) -> np.ndarray:
    """One float per node (NaN: no value) of metric ``name`` (a key of :data:`METRICS`)."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; use one of {', '.join(METRICS)}")
    if name in ("grad_norm", "output_norm"):
        return _summary_col(g, name.split("_")[0], "norm")
    if name in TIME_COLUMNS:
        return np.asarray(g.tables.times[:, TIME_COLUMNS.index(name)], float)
    if name == "order":
        pos = g.tables.nodes[:, NODE_COLUMNS.index("order")].astype(float)
        return np.where(pos >= 0, pos, np.nan)
    if name == "nonfinite":
        bad = [
            np.nan_to_num(_summary_col(g, w, c)) for w in ("output", "grad") for c in ("nan", "inf")
        ]
        return np.sum(bad, axis=0)
    saved = getattr(g.nodes, "columns", {}).get("saved")
    if saved is None:
        return np.array([float(n.saved_bytes) for n in g.nodes])
    return np.array([float(sum(v[3] for v in s)) for s in saved])


def scale(values: np.ndarray) -> dict[str, Any]:
    """Colour scale facts: min, max, smallest positive, and whether a log scale reads better
    (one value dominating: max over median of the positive values past 100).

    >>> scale(np.array([1.0, 2.0, 1000.0, np.nan]))["log_suggested"]
    True
    """
    v = values[np.isfinite(values)]
    pos = v[v > 0]
    if not len(v):
        return {"min": None, "max": None, "positive_min": None, "log_suggested": False}
    ratio = float(pos.max() / np.median(pos)) if len(pos) else 1.0
    return {
        "min": float(v.min()), "max": float(v.max()),
        "positive_min": float(pos.min()) if len(pos) else None, "log_suggested": ratio > 100,
    }  # fmt: skip


def _as_2d(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(-1, a.shape[-1])


def heatmap(a: np.ndarray, max_side: int = 128) -> dict[str, Any]:
    """``a`` as rows x cols (1-D: one row; N-D: leading dimensions as rows), block-averaged
    so that neither side passes ``max_side``; NaN/Inf are ignored in a block's mean."""
    a2 = _as_2d(np.asarray(a, dtype=float) if np.asarray(a).dtype.kind != "c" else np.abs(a))
    r, c = a2.shape
    br, bc = max(1, math.ceil(r / max_side)), max(1, math.ceil(c / max_side))
    rows, cols = math.ceil(r / br), math.ceil(c / bc)
    padded = np.full((rows * br, cols * bc), np.nan)
    padded[:r, :c] = np.where(np.isfinite(a2), a2, np.nan)
    blocks = padded.reshape(rows, br, cols, bc)
    with warnings.catch_warnings():  # NOTE: an all-NaN block is NaN, said once by numpy
        warnings.simplefilter("ignore", RuntimeWarning)
        data = np.nanmean(blocks, axis=(1, 3)) if br * bc > 1 else blocks[:, 0, :, 0]
    finite = a2[np.isfinite(a2)]
    return {
        "shape": list(np.shape(a)), "rows": rows, "cols": cols, "block": [br, bc],
        "agg": "mean", "downsampled": br * bc > 1,
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "nan": int(np.isnan(a2).sum()), "inf": int(np.isinf(a2).sum()),
        "data": [[number(x) for x in row] for row in data.tolist()],
    }  # fmt: skip


def histogram(a: np.ndarray, bins: int = 40, log: bool = False) -> dict[str, Any]:
    """Counts of the finite values of ``a`` in ``bins`` equal bins (``log``: of log10|a| over
    the non-zero ones), with the NaN, Inf and zero counts beside."""
    flat = np.asarray(a).reshape(-1)
    flat = np.abs(flat) if flat.dtype.kind == "c" else flat.astype(float)
    finite = flat[np.isfinite(flat)]
    zeros = int((finite == 0).sum())
    data = np.log10(np.abs(finite[finite != 0])) if log else finite
    counts, edges = (
        np.histogram(data, bins=bins) if data.size else (np.zeros(bins, int), np.zeros(bins + 1))
    )
    return {
        "edges": [float(x) for x in edges], "counts": [int(x) for x in counts], "log": log,
        "total": int(flat.size), "nan": int(np.isnan(flat).sum()),
        "inf": int(np.isinf(flat).sum()), "zeros": zeros,
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
    }  # fmt: skip


class ValueNotKeptError(InspectError, LookupError):
    """A node's value was not kept by the capture's value policy."""


def node_value(g: Graph, i: int, which: str) -> np.ndarray:
    """The full value ``which`` of node ``i``: ``output``, ``grad``, ``input.K``,
    ``grad_out.K`` or ``saved.K`` (the K-th value the node saved for backward).

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(3, requires_grad=True)
    >>> with tpx_inspect.capture(values="all") as cap:
    ...     (x * 2).sum().backward()
    >>> g = cap.trace.graphs[0]
    >>> node_value(g, 1, "grad").tolist(), node_value(g, 1, "output").tolist()
    ([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
    """
    node = g.node(i)
    nv = g.node_values(i)
    kind, _, k = which.partition(".")
    a = None
    if kind in ("output", "grad"):
        a = nv.output if kind == "output" else nv.grad
    elif kind == "input" and int(k) < len(nv.inputs):
        a = nv.inputs[int(k)]
    elif kind == "grad_out" and int(k) < len(nv.grads_out):
        a = nv.grads_out[int(k)]
    elif kind == "saved" and int(k) < len(node.saved):
        slot = node.saved[int(k)].slot
        a = nv.output if slot == -1 else nv.inputs[slot] if slot < len(nv.inputs) else None
    if a is None:
        raise ValueNotKeptError(
            f"node {i} ({node.title}): {which} was not kept by this capture (detail "
            f"{g.detail!r}); capture with values='all' to keep full values"
        )
    return np.asarray(a)


def saved(g: Graph, i: int) -> list[dict[str, Any]]:
    """The values node ``i`` saved for backward, with statistics when the value was kept."""
    out = []
    for k, s in enumerate(g.node(i).saved):
        try:
            a = node_value(g, i, f"saved.{k}")
        except ValueNotKeptError:
            a = None
        row: dict[str, Any] = {
            "slot": s.slot, "which": f"saved.{k}", "shape": list(s.shape), "dtype": s.dtype,
            "bytes": s.bytes, "has_value": a is not None,
        }  # fmt: skip
        if a is not None and a.size and a.dtype.kind in "fiub":
            f = a.astype(float)
            row["summary"] = {k2: number(float(fn(f))) for k2, fn in
                              (("min", np.min), ("max", np.max), ("mean", np.mean),
                               ("std", np.std))}  # fmt: skip
        out.append(row)
    return out
