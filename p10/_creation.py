"""Creating tensors: from data, filled, ranges, and interop with NumPy and DLPack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from p10._backend import Backend, get_backend
from p10._dtypes import ALL_DTYPES, default_complex_dtype, get_default_dtype, to_dtype
from p10._errors import ArgumentError, DTypeError, ShapeError
from p10._ops import Op
from p10._tensor import Tensor, apply, wrap

Shape = int | Sequence[int]


def normalize_shape(shape: Any, op: str = "shape") -> tuple[int, ...]:
    """A shape given as an int or a sequence of ints, checked to be non-negative.

    >>> normalize_shape(3), normalize_shape([2, 3])
    ((3,), (2, 3))
    """
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(int(operator_index(s)) for s in shape)
    except TypeError:
        raise ShapeError(f"{op}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ShapeError(f"{op}: negative size in shape {out}; sizes must be >= 0")
    return out


def operator_index(value: Any) -> int:
    """``operator.index`` that also accepts one-element integer tensors."""
    import operator

    return operator.index(value)


def _infer_dtype(obj: Any, arr: np.ndarray) -> np.dtype:
    if isinstance(obj, np.ndarray | np.generic):
        return arr.dtype
    if arr.dtype.kind == "f":
        return get_default_dtype()
    if arr.dtype.kind in "iu":
        return np.dtype("int64")
    if arr.dtype.kind == "c":
        return default_complex_dtype()
    return arr.dtype


def _place(arr: np.ndarray, backend: str | Backend | None, device: Any = None) -> Tensor:
    b = get_backend(backend, device)
    return wrap(b.from_numpy(arr), b)


def asarray(
    obj: Any,
    /,
    *,
    dtype: Any = None,
    device: str | None = None,
    copy: bool | None = None,
    backend: str | Backend | None = None,
) -> Tensor:
    """Make a tensor from a tensor, NumPy array, nested sequence or Python scalar.

    Copies by default; an existing P10 tensor that already has the dtype and backend is
    returned as is unless ``copy=True``. Python floats become the default float dtype.

    >>> asarray([1, 2, 3]).dtype, asarray([1.5]).dtype, asarray(True).dtype
    (dtype('int64'), dtype('float32'), dtype('bool'))
    """
    target = to_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Tensor):
        if backend is not None or device is not None:
            backend = get_backend(backend if backend is not None else obj._backend, device)
        same = (target is None or obj.dtype == target) and (
            backend is None or backend is obj._backend
        )
        if same and not copy:
            return obj
        if copy is False:
            raise ArgumentError("asarray: copy=False but a dtype or backend change needs a copy")
        if backend is None or backend is obj._backend:
            # NOTE: the backend's own copy or cast: a Dask tensor stays lazy, a GPU one on the GPU
            if target is None or obj.dtype == target:
                return apply(Op.COPY, obj)
            return apply(Op.CAST, obj, dtype=target)
        arr = np.array(obj.numpy(), dtype=target)
        return _place(arr, backend if backend is not None else obj._backend)
    if copy is False and not isinstance(obj, np.ndarray):
        raise ArgumentError("asarray: copy=False needs an array that can be shared without copying")
    try:
        arr = np.array(obj, copy=copy is not False)
    except (ValueError, TypeError) as e:
        raise ShapeError(f"asarray: cannot make a tensor from {type(obj).__name__}: {e}") from e
    dt = target if target is not None else _infer_dtype(obj, arr)
    if dt not in ALL_DTYPES:
        raise DTypeError(f"asarray: dtype {dt} is not supported; pass dtype= one of p10's dtypes")
    if arr.dtype != dt:
        if copy is False:
            raise ArgumentError(f"asarray: copy=False but {arr.dtype} -> {dt.name} needs a copy")
        arr = arr.astype(dt)
    return _place(arr, backend, device)


def tensor(obj: Any, /, *, dtype: Any = None, backend: str | Backend | None = None) -> Tensor:
    """A new tensor holding a copy of ``obj`` (PyTorch's ``torch.tensor``).

    >>> tensor([[1.0, 2.0]]).shape
    (1, 2)
    """
    return asarray(obj, dtype=dtype, copy=True, backend=backend)


def from_numpy(arr: np.ndarray, /) -> Tensor:
    """A NumPy-backed tensor that shares memory with ``arr`` (writes to ``arr`` show through).

    >>> import numpy as np
    >>> a = np.zeros(2); t = from_numpy(a); a[0] = 5; t.tolist()
    [5.0, 0.0]
    """
    if not isinstance(arr, np.ndarray):
        raise DTypeError(f"from_numpy: expected a numpy.ndarray, got {type(arr).__name__}")
    if arr.dtype not in ALL_DTYPES:
        raise DTypeError(f"from_numpy: dtype {arr.dtype} is not supported; convert with .astype")
    return wrap(arr, get_backend("numpy"))


def from_dlpack(
    x: Any,
    /,
    *,
    device: str | None = None,
    copy: bool | None = None,
    backend: str | Backend | None = None,
) -> Tensor:
    """A tensor sharing memory with any object that implements ``__dlpack__``.

    ``copy=True`` always copies, ``copy=False`` never does (an error when it must), ``None``
    shares when it can. ``device`` places the result, as in :func:`asarray`.

    >>> import numpy as np
    >>> from_dlpack(np.arange(3)).tolist()
    [0, 1, 2]
    >>> a = np.zeros(2); t = from_dlpack(a, copy=True); a[0] = 1.0; t.tolist()
    [0.0, 0.0]
    """
    try:
        arr = np.from_dlpack(x, copy=copy)
    except BufferError as e:
        raise ArgumentError(f"from_dlpack: {e}; pass copy=None or copy=True") from None
    return _place(arr, backend, device)


def _filled(
    shape: Shape, value: Any, dtype: Any, backend: Any, name: str, device: Any = None
) -> Tensor:
    shape = normalize_shape(shape, name)
    if dtype is None:
        dtype = get_default_dtype() if isinstance(value, float) else None
        if isinstance(value, complex):
            dtype = default_complex_dtype()
        if dtype is None:
            dtype = np.dtype("bool") if isinstance(value, bool) else np.dtype("int64")
    return _place(np.full(shape, value, dtype=to_dtype(dtype)), backend, device)


def zeros(
    shape: Shape, *, dtype: Any = None, device: str | None = None, backend: Any = None
) -> Tensor:
    """A tensor of zeros (default float dtype).

    >>> zeros((2, 3)).shape, zeros(2).dtype
    ((2, 3), dtype('float32'))
    """
    return _filled(shape, 0.0, dtype, backend, "zeros", device)


def ones(
    shape: Shape, *, dtype: Any = None, device: str | None = None, backend: Any = None
) -> Tensor:
    """A tensor of ones (default float dtype).

    >>> ones(3).tolist()
    [1.0, 1.0, 1.0]
    """
    return _filled(shape, 1.0, dtype, backend, "ones", device)


def empty(
    shape: Shape, *, dtype: Any = None, device: str | None = None, backend: Any = None
) -> Tensor:
    """An uninitialized tensor; P10 fills it with zeros so results are reproducible.

    >>> empty((1, 2)).shape
    (1, 2)
    """
    return _filled(shape, 0.0, dtype, backend, "empty", device)


def full(
    shape: Shape,
    fill_value: bool | int | float | complex,
    *,
    dtype: Any = None,
    device: str | None = None,
    backend: Any = None,
) -> Tensor:
    """A tensor filled with ``fill_value``; dtype inferred from it when not given.

    >>> full((2,), 7).tolist(), full((1,), 0.5).dtype
    ([7, 7], dtype('float32'))
    """
    return _filled(shape, fill_value, dtype, backend, "full", device)


def _like(x: Tensor, value: Any, dtype: Any, name: str) -> Tensor:
    return _filled(x.shape, value, dtype if dtype is not None else x.dtype, x._backend, name)


def zeros_like(x: Tensor, /, *, dtype: Any = None, device: str | None = None) -> Tensor:
    """Zeros with the shape, dtype and backend of ``x``.

    >>> zeros_like(ones((2,), dtype="int32")).tolist()
    [0, 0]
    """
    return _like(x, 0, dtype, "zeros_like")


def ones_like(x: Tensor, /, *, dtype: Any = None, device: str | None = None) -> Tensor:
    """Ones with the shape, dtype and backend of ``x``.

    >>> ones_like(zeros((2,))).tolist()
    [1.0, 1.0]
    """
    return _like(x, 1, dtype, "ones_like")


def empty_like(x: Tensor, /, *, dtype: Any = None, device: str | None = None) -> Tensor:
    """Like :func:`empty` with the shape, dtype and backend of ``x``.

    >>> empty_like(zeros((2,))).shape
    (2,)
    """
    return _like(x, 0, dtype, "empty_like")


def full_like(
    x: Tensor, /, fill_value: bool | int | float, *, dtype: Any = None, device: str | None = None
) -> Tensor:
    """``fill_value`` with the shape, dtype and backend of ``x``.

    >>> full_like(zeros((2,)), 3).tolist()
    [3.0, 3.0]
    """
    return _like(x, fill_value, dtype, "full_like")


def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: Any = None,
    device: str | None = None,
    backend: Any = None,
) -> Tensor:
    """Evenly spaced values in ``[start, stop)``; integer arguments give int64.

    >>> arange(4).tolist(), arange(0, 1, 0.5).tolist()
    ([0, 1, 2, 3], [0.0, 0.5])
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ArgumentError("arange: step must not be zero")
    floating = any(isinstance(v, float) for v in (start, stop, step))
    dt = to_dtype(dtype) if dtype is not None else (get_default_dtype() if floating else None)
    arr = np.arange(start, stop, step, dtype=np.float64 if floating else np.int64)
    return _place(arr.astype(dt) if dt is not None else arr, backend, device)


def linspace(
    start: float,
    stop: float,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: str | None = None,
    endpoint: bool = True,
    backend: Any = None,
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``.

    >>> linspace(0, 1, 3).tolist()
    [0.0, 0.5, 1.0]
    """
    dt = to_dtype(dtype) if dtype is not None else get_default_dtype()
    arr = np.linspace(start, stop, num, endpoint=endpoint).astype(dt)
    return _place(arr, backend, device)


def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: Any = None,
    device: str | None = None,
    backend: Any = None,
) -> Tensor:
    """A 2-D tensor with ones on the ``k``-th diagonal.

    >>> eye(2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    dt = to_dtype(dtype) if dtype is not None else get_default_dtype()
    return _place(np.eye(n_rows, n_cols, k=k, dtype=dt), backend, device)
