"""The summary statistics as they were computed before the large values of a graph record were
summarized in groups (one value at a time, at forward for a large output), with the std as
numpy.std defines it: the reference that tests/inspect/test_capture_stats.py compares the
capture with."""

from __future__ import annotations

import math

import numpy as np

from tpx_inspect.summary import PREVIEW, _small_row


def reference_stats_row(
    a: np.ndarray, preview: int = PREVIEW
) -> tuple[list[float], tuple[float, ...]]:
    """``summary.stats_row`` as it was: a float64-accumulated sum, then min, max and a BLAS
    sum of squares of the finite elements; NaN/Inf counted when the sum is not finite."""
    kind = a.dtype.kind
    if a.size <= 32 and kind in "fiub":
        return _small_row(a.reshape(-1).tolist(), preview)
    head = tuple(float(v) for v in a.reshape(-1)[:preview].tolist()) if kind != "c" else ()
    if kind not in "fiub" or a.size == 0:
        return [math.nan] * 5 + [0.0, 0.0, 0.0], head
    if kind == "b":
        a = a.view(np.uint8)
    zeros = float(a.size - np.count_nonzero(a))
    if kind != "f":
        return _moments(a.astype(np.float64), 0.0, 0.0, zeros), head
    total = float(np.add.reduce(a, axis=None, dtype=np.float64))
    if math.isfinite(total):
        return _moments(a, 0.0, 0.0, zeros, total), head
    nan = float(np.count_nonzero(np.isnan(a)))
    inf = float(np.count_nonzero(np.isinf(a)))
    if nan + inf == 0:  # the float64 sum overflowed; every element is finite
        return _moments(a, 0.0, 0.0, zeros), head
    return _moments(a[np.isfinite(a)], nan, inf, zeros), head


def _moments(
    a: np.ndarray, nan: float, inf: float, zeros: float, total: float | None = None
) -> list[float]:
    if a.size == 0:
        return [math.nan] * 5 + [nan, inf, zeros]
    flat = a.reshape(-1)
    if total is None:
        total = float(np.add.reduce(flat, dtype=np.float64))
    mean = total / flat.size
    f64 = flat.astype(np.float64)
    sq = float(np.dot(f64, f64))
    # NOTE: the std as NumPy defines it in float64 (the old sq/n - mean**2 lost every digit on
    # values far from zero; see test_std_of_values_far_from_zero)
    std = float(np.std(f64)) if math.isfinite(mean) else math.nan
    lo, hi = float(flat.min()), float(flat.max())
    return [lo, hi, mean, std, math.sqrt(sq), nan, inf, zeros]
