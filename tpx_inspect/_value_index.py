"""The kept values of a loaded trace: the sidecar's value index checked with NumPy over whole
columns, and a :class:`~tpx_inspect.tables.PackedValues` store that makes each value's view
on first access.

The index has one row per value, (dtype code, offset, size, ndim), and ``values.shapes`` the
values' dimensions one after another. Every value must lie inside its buffer and its shape's
product must be its size. The column check below accepts only what the exact check
(``_check_arrays.value_shapes``, a loop over the values in Python) accepts; whatever it does
not accept, or cannot decide without risk of overflow, goes to that loop, which raises the
message naming the first bad value.

>>> import numpy as np
>>> index = np.array([[0, 0, 2, 1], [0, 2, 3, 2]])
>>> starts(index, np.array([2, 3, 1]), [5]).tolist()
[0, 1]
>>> starts(index, np.array([2, 3, 2]), [5])
Traceback (most recent call last):
...
tpx_inspect.errors.TraceFormatError: value 1: the value index points outside the sidecar buffers
"""

from __future__ import annotations

import numpy as np

from tpx_inspect import _check_arrays as _arrays
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.tables import PackedValues

__all__ = ["load_values", "starts"]

_MAX_NDIM = 32  # NOTE: beyond it (NumPy allows 64) the exact loop decides
_HUGE = 2**62


def load_values(arrays: dict[str, np.ndarray], path: str) -> PackedValues:
    """The value store of a sidecar's ``values.*`` arrays, every value checked first."""
    try:
        index, shapes = arrays["values.index"], arrays["values.shapes"]
        bufs = [arrays[f"values.{i}"] for i in range(len(arrays["values.dtypes"]))]
    except KeyError as e:
        raise TraceFormatError(f"{path}: sidecar lacks array {e}") from None
    except TypeError:
        raise TraceFormatError(f"{path}: array 'values.dtypes' is not a list") from None
    if any(b.ndim != 1 for b in bufs):
        raise TraceFormatError(f"{path}: a values buffer is not 1-D")
    try:
        first = starts(index, shapes, [len(b) for b in bufs])
    except TraceFormatError as e:
        raise TraceFormatError(f"{path}: {e}") from None
    # NOTE: copy=False: an int64 index (what the writer writes) is kept as loaded
    index, shapes = index.astype(np.int64, copy=False), shapes.astype(np.int64, copy=False)
    return PackedValues(bufs, index, shapes, first)


def starts(index: np.ndarray, shapes: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Where each value's dimensions begin in ``shapes``, once every value of ``index`` is
    checked against the buffer sizes ``sizes`` (by dtype code); else TraceFormatError."""
    first = _checked_starts(index, shapes, sizes)
    if first is None:
        _arrays.value_shapes(index, shapes, sizes)  # NOTE: raises, naming the first bad value
        ndim = index[:, 3].astype(np.int64)  # NOTE: the exact loop passed what the columns did not
        first = np.cumsum(ndim) - ndim
    return first


def _checked_starts(index: np.ndarray, shapes: np.ndarray, sizes: list[int]) -> np.ndarray | None:
    """``starts`` when every value is good; None when one is not, or is too large to decide
    in int64 (a huge dimension or ndim)."""
    if index.ndim != 2 or index.shape[1] != 4 or index.dtype.kind not in "iu":
        return None
    if shapes.ndim != 1 or shapes.dtype.kind not in "iu":
        return None
    if len(shapes) and (int(shapes.min()) < 0 or int(shapes.max()) > _HUGE):
        return None
    if not len(index):
        return np.zeros(0, np.int64)
    if int(index.max()) > _HUGE:
        return None
    code, off, size, ndim = index.astype(np.int64, copy=False).T
    limit = max(sizes, default=0)
    if int(ndim.min()) < 0 or int(ndim.max()) > _MAX_NDIM or int(code.min()) < 0:
        return None
    if int(code.max()) >= len(sizes) or int(off.min()) < 0 or int(off.max()) > limit:
        return None
    if int(size.min()) < 0 or int(size.max()) > limit:
        return None
    ends = np.cumsum(ndim)
    if int(ends[-1]) > len(shapes):
        return None
    first = ends - ndim
    if not _products_are(shapes.astype(np.int64, copy=False), first, ndim, size):
        return None
    if (off + size > np.asarray(sizes, np.int64)[code]).any():
        return None
    return first


def _products_are(flat: np.ndarray, first: np.ndarray, ndim: np.ndarray, size: np.ndarray) -> bool:
    """Whether the product of each value's dimensions is its size, exactly: in int64, and in
    float64 beside it to see that no product reaches 2**62 (where int64 could wrap)."""
    prod, approx = np.ones(len(ndim), np.int64), np.ones(len(ndim))
    for j in range(int(ndim.max())):
        dim = np.where(ndim > j, flat[np.minimum(first + j, len(flat) - 1)], 1)
        prod *= dim
        approx *= dim
    return not (approx > _HUGE).any() and bool((prod == size).all())
