"""Checks of a trace's arrays before any record reads them: each table's dtype and shape,
the integer columns of float tables (value ids, counts, preview lengths), the value index, and
every row reference of a graph. A trace that passes cannot make a later lookup raise
``IndexError``, ``OverflowError`` or ``MemoryError``.

>>> import numpy as np
>>> check_table("r0.nodes", np.zeros((2, 4), np.int64))
>>> check_table("r0.nodes", np.zeros((2, 3), np.int64))
Traceback (most recent call last):
...
tpx_inspect.errors.TraceFormatError: array 'r0.nodes': shape (2, 3), expected (rows, 4) of int
"""

from __future__ import annotations

import math

import numpy as np

from tpx_inspect.errors import TraceFormatError
from tpx_inspect.summary import PREVIEW
from tpx_inspect.tables import SUMMARY_COLUMNS, GraphTables

__all__ = ["check_graph_tables", "check_summaries", "check_table", "value_shapes"]

# table -> (dtype kind, number of columns or None for a 1-D table)
_LAYOUT = {
    "summaries": ("f", len(SUMMARY_COLUMNS)), "previews": ("f", PREVIEW), "nodes": ("i", 4),
    "times": ("f", 2), "grads_out": ("i", None), "consts": ("i", None),
    "accumulations": ("i", 4),
}  # fmt: skip
_VALUE, _PREVIEW_LEN = SUMMARY_COLUMNS.index("value"), SUMMARY_COLUMNS.index("preview_len")
_COUNTS = [SUMMARY_COLUMNS.index(c) for c in ("nan", "inf", "zeros")]


def _fail(what: str) -> TraceFormatError:
    return TraceFormatError(what)


def check_table(key: str, a: np.ndarray) -> None:
    """``a`` has the dtype kind and columns of the run table ``key`` (``r<run>.<table>``)."""
    kind, cols = _LAYOUT[key.rsplit(".", 1)[-1]]
    want = f"(rows, {cols})" if cols is not None else "(rows,)"
    good_kind = a.dtype.kind == kind or (kind == "i" and a.dtype.kind == "u")
    good_shape = a.ndim == 1 if cols is None else (a.ndim == 2 and a.shape[1] == cols)
    if not (good_kind and good_shape):
        name = {"f": "float", "i": "int"}[kind]
        raise _fail(f"array {key!r}: shape {a.shape}, expected {want} of {name}")


def _integral(col: np.ndarray, lo: float, hi: float, nan_ok: bool = False) -> bool:
    # NOTE: one gather of the (strided) column, then its min/max (a NaN fails the bounds, so
    # does an infinity: the bounds are finite) and one comparison with its rounding; with
    # nan_ok, NaN entries are dropped first (only when there are some)
    col = np.ascontiguousarray(col).reshape(-1)
    if nan_ok:
        nan = np.isnan(col)
        if nan.any():
            col = col[~nan]
    if not len(col):
        return True
    return bool(col.min() >= lo and col.max() <= hi and np.array_equal(col, np.round(col)))


def check_summaries(key: str, a: np.ndarray, n_values: int) -> None:
    """A run's summary table: value ids -1..n_values-1, counts whole numbers (or NaN),
    preview lengths 0..PREVIEW."""
    if not len(a):
        return
    if not _integral(a[:, _VALUE], -1, n_values - 1):
        raise _fail(f"array {key!r}: a value id is not -1 or one of the {n_values} values")
    if not _integral(a[:, _PREVIEW_LEN], 0, PREVIEW):
        raise _fail(f"array {key!r}: a preview length is not a whole number 0..{PREVIEW}")
    if not _integral(a[:, _COUNTS], 0, 2.0**62, nan_ok=True):
        raise _fail(f"array {key!r}: a NaN/Inf/zero count is not a whole number")


def _rows_in(refs: np.ndarray, n_rows: int) -> bool:
    return not len(refs) or (int(refs.max()) < n_rows and int(refs.min()) >= -1)


def check_graph_tables(gid: int, t: GraphTables, n_nodes: int, edges: int, detail: str) -> None:
    """Every row a graph refers to exists: summary rows, node ids of accumulations."""
    n_rows = len(t.summaries)
    if len(t.nodes) != n_nodes or len(t.times) != n_nodes:
        raise _fail(f"graph {gid}: {len(t.nodes)} node rows for {n_nodes} nodes")
    if len(t.previews) not in (0, n_rows):
        raise _fail(f"graph {gid}: {len(t.previews)} previews for {n_rows} summaries")
    if not len(t.previews) and n_rows and t.summaries[:, _PREVIEW_LEN].any():
        raise _fail(f"graph {gid}: summaries have previews, but the graph has no preview rows")
    refs = [t.nodes[:, :2].reshape(-1), t.grads_out, t.consts, t.accumulations[:, 2:].reshape(-1)]
    if not all(_rows_in(r, n_rows) for r in refs):
        raise _fail(f"graph {gid}: a summary row is out of range (0..{n_rows - 1})")
    if len(t.nodes) and int(t.nodes[:, 2:].min()) < -1:
        raise _fail(f"graph {gid}: a backward position is below -1")
    acc = t.accumulations
    if len(acc) and not (_rows_in(acc[:, 1], n_nodes) and int(acc[:, 0].min()) >= 0
                         and int(acc[:, 0].max()) < n_nodes):  # fmt: skip
        raise _fail(f"graph {gid}: an accumulation names a node outside 0..{n_nodes - 1}")
    if detail == "full" and len(t.grads_out) and (len(t.grads_out), len(t.consts)) != (edges,) * 2:
        raise _fail(f"graph {gid}: {len(t.grads_out)} gradient rows for {edges} inputs")


def value_shapes(index: np.ndarray, shapes: np.ndarray, sizes: list[int]) -> list[tuple]:
    """The shape of each value of the value index (rows: dtype code, offset, size, ndim),
    checked against the buffers' sizes (``sizes[code]``)."""
    if index.ndim != 2 or index.shape[1] != 4 or index.dtype.kind not in "iu":
        raise _fail(f"array 'values.index': shape {index.shape}, expected (values, 4) of int")
    if shapes.ndim != 1 or shapes.dtype.kind not in "iu" or (len(shapes) and shapes.min() < 0):
        raise _fail("array 'values.shapes' is not a list of non-negative ints")
    out, pos = [], 0
    flat = shapes.tolist()
    for code, off, size, ndim in index.tolist():
        shape = tuple(flat[pos : pos + ndim])
        pos += ndim
        bad = ndim < 0 or len(shape) != ndim or not 0 <= code < len(sizes) or off < 0
        if bad or math.prod(shape) != size or off + size > sizes[code]:
            raise _fail(f"value {len(out)}: the value index points outside the sidecar buffers")
        out.append(shape)
    return out
