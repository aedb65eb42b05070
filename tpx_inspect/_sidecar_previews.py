"""Previews of kept values derived instead of stored (trace format 2.1).

A summary row's preview is the first ``preview_len`` elements of its value (C order, as
float64, NaN after them). When the value itself is kept in the sidecar, storing the preview
repeats it: 14.4 of the 68.7 MB of a 100,000-node ``values="small"`` trace. From format 2.1 a
run marked ``"derived_previews": true`` stores, in its sidecar member
``r<run>.unkept_previews``, only the preview rows whose summary row keeps no value (value id
-1), in order; the loader makes the others from the values and puts the table back together,
so the loaded trace is the same, bit for bit. The writer derives every preview it drops and
compares the bits first; a run where one differs is written as in format 2.0.

Preview rows belong to graphs: graph ``g`` with ``rows["previews"] = [p, q]`` (``q > p``) has
one preview per summary row of ``rows["summaries"] = [s, s + q - p]``. In a derived run those
ranges tile the run's (unstored) preview table, graphs with the same rows counted once: what
:func:`preview_rows` checks.

>>> import numpy as np
>>> arrays = {"values.index": np.array([[0, 0, 3, 1]]), "values.dtypes": np.array(["<i8"]),
...           "values.0": np.array([7, 8, 9])}
>>> derive(np.array([0]), np.array([2]), arrays).tolist()
[[7.0, 8.0, nan, nan, nan, nan]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpx_inspect.errors import TraceFormatError
from tpx_inspect.records import SUMMARY_COLUMNS
from tpx_inspect.summary import PREVIEW

__all__ = ["DERIVED", "UNKEPT", "derive", "drop_derivable", "expand", "preview_rows"]

DERIVED = "derived_previews"
"""The run key (format 2.1) saying that the previews of kept values are not stored."""
UNKEPT = "unkept_previews"
"""The run table (``r<run>.unkept_previews``) holding the other previews of a derived run."""

_VALUE, _PREVIEW_LEN = SUMMARY_COLUMNS.index("value"), SUMMARY_COLUMNS.index("preview_len")


def drop_derivable(rid: int, graphs: list[dict[str, Any]], arrays: dict[str, np.ndarray]) -> bool:
    """Writer: when the previews of run ``rid`` (its ``graphs``' JSON) of kept values equal
    what :func:`derive` makes of them (bit for bit), store only the others
    (``r<rid>.unkept_previews``, replacing ``r<rid>.previews``) and say True (the run is
    then marked ``"derived_previews": true``); else leave the arrays as they are."""
    previews, summaries = arrays[f"r{rid}.previews"], arrays[f"r{rid}.summaries"]
    if not len(previews):
        return False
    src = preview_rows(graphs, len(summaries))
    if len(src) != len(previews):
        return False
    whole = len(src) == len(summaries)  # NOTE: then src is 0..n-1: views, no gathers
    rows = summaries if whole else summaries[src]
    ids = rows[:, _VALUE].astype(np.int64)
    kept = ids >= 0
    every = bool(kept.all())
    if not every and not kept.any():
        return False
    plen = rows[:, _PREVIEW_LEN].astype(np.int64)
    try:
        made = derive(ids if every else ids[kept], plen if every else plen[kept], arrays)
    except TraceFormatError:  # NOTE: a value of a dtype without a float preview
        return False
    stored = previews if every else previews[kept]
    if not np.array_equal(made.view(np.uint64), np.asarray(stored).view(np.uint64)):
        return False
    del arrays[f"r{rid}.previews"]
    arrays[f"r{rid}.{UNKEPT}"] = np.zeros((0, PREVIEW)) if every else previews[~kept]
    return True


def expand(run: dict[str, Any], arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Loader: the preview table of a derived run (checked summaries and values), made from
    its ``unkept_previews`` and the kept values; TraceFormatError if they do not fit."""
    rid = run["id"]
    key = f"r{rid}.{UNKEPT}"
    unkept = arrays.get(key)
    if unkept is None:
        raise TraceFormatError(f"the sidecar lacks array {key!r} (the run derives its previews)")
    if unkept.dtype.kind != "f" or unkept.ndim != 2 or unkept.shape[1] != PREVIEW:
        raise TraceFormatError(
            f"array {key!r}: shape {unkept.shape}, expected (rows, {PREVIEW}) of float"
        )
    summaries = arrays[f"r{rid}.summaries"]
    src = preview_rows(run["graphs"], len(summaries))
    rows = summaries if len(src) == len(summaries) else summaries[src]  # NOTE: 0..n-1: a view
    ids = rows[:, _VALUE].astype(np.int64)
    kept = ids >= 0
    n_kept = int(np.count_nonzero(kept))
    if len(src) - n_kept != len(unkept):
        raise TraceFormatError(
            f"array {key!r}: {len(unkept)} rows for {len(src) - n_kept} summary rows "
            "without a kept value"
        )
    plen = rows[:, _PREVIEW_LEN].astype(np.int64)
    if n_kept == len(src):  # NOTE: every value kept (values="small" or "all"): no masks
        return derive(ids, plen, arrays)
    out = np.empty((len(src), PREVIEW), np.float64)
    out[~kept] = unkept
    out[kept] = derive(ids[kept], plen[kept], arrays)
    return out


def preview_rows(graphs: list[dict[str, Any]], n_summaries: int) -> np.ndarray:
    """The summary row of each row of a run's preview table (see the module docstring);
    TraceFormatError when the graphs' preview ranges do not tile it."""
    spans: set[tuple[int, int, int, int]] = set()  # NOTE: graphs may share their rows
    for g in graphs:
        (p, q), (s, t) = g["rows"]["previews"], g["rows"]["summaries"]
        if q > p:
            spans.add((p, q, s, t))
    ordered = sorted(spans)
    end = 0
    for p, q, s, t in ordered:
        # NOTE: q <= n_summaries: the table made is never longer than the summaries'
        if p != end or t - s != q - p or not 0 <= s <= t <= n_summaries or q > n_summaries:
            raise TraceFormatError(
                f"a graph's preview rows {p}:{q} do not follow the previous graph's (row {end}) "
                f"or do not match its summary rows {s}:{t}"
            )
        end = q
    if not ordered:
        return np.zeros(0, np.int64)
    first = np.array([s - p for p, _, s, _ in ordered], np.int64)
    lengths = np.array([q - p for p, q, _, _ in ordered], np.int64)
    return np.arange(end, dtype=np.int64) + np.repeat(first, lengths)


def derive(ids: np.ndarray, plen: np.ndarray, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The previews (rows of :data:`~tpx_inspect.summary.PREVIEW` float64, NaN-padded) of
    the values ``ids`` of the ``values.*`` arrays, each ``plen`` long; TraceFormatError if a
    length is more than its value's size or a value has no float preview (a string)."""
    index = arrays["values.index"]
    if len(ids) != len(index) or not np.array_equal(ids, np.arange(len(ids))):
        index = index[ids]  # NOTE: else every value in order (a whole capture): no gather
    codes, offsets, sizes = index[:, 0], index[:, 1], index[:, 2]
    if len(ids) and (plen > sizes).any():
        raise TraceFormatError("a summary's preview length is more than its value's size")
    dtypes = len(arrays["values.dtypes"])
    # NOTE: one dtype (most traces): its rows are the table (no NaN table filled, then copied)
    out = np.full((len(ids), PREVIEW), np.nan) if dtypes != 1 else None
    for c in range(dtypes):
        mine = slice(None) if dtypes == 1 else np.flatnonzero(codes == c)
        lengths = plen[mine]
        if not len(lengths) or not lengths.any():
            continue
        buf = arrays[f"values.{c}"]
        if buf.dtype.kind not in "fiub":
            raise TraceFormatError(f"values of dtype {buf.dtype} have no float preview")
        made = _firsts(buf, offsets[mine]).astype(np.float64, copy=False)
        np.putmask(made, np.arange(PREVIEW) >= lengths[:, None], np.nan)
        if out is None:
            return made
        out[mine] = made
    return np.full((len(ids), PREVIEW), np.nan) if out is None else out


def _firsts(buf: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The PREVIEW elements of ``buf`` from each offset, a row each: rows of a sliding
    window over ``buf`` (one gather of rows, no index per element); those that would run
    past its end gathered element by element, clipped at its last element. Elements past a
    value's own preview are another value's (the caller sets them to NaN)."""
    last = len(buf) - PREVIEW
    if last < 0:
        return buf[np.minimum(offsets[:, None] + np.arange(PREVIEW), len(buf) - 1)]
    made = np.lib.stride_tricks.sliding_window_view(buf, PREVIEW)[np.minimum(offsets, last)]
    tail = np.flatnonzero(offsets > last)  # NOTE: the values that start in the last elements
    made[tail] = buf[np.minimum(offsets[tail, None] + np.arange(PREVIEW), len(buf) - 1)]
    return made
