"""The P10 tensor: a backend array plus its backend, and the dispatcher that runs ops on it.

Mutation policy: tensors are mutable. In-place writes (``x += 1``, ``x[0] = 2``, ``x.add_(y)``)
change the value and bump a version counter shared with every view of the same memory (views come
from reshape, permute, flip, broadcast_to and basic indexing), so a layer above (TPX) that saved a
tensor can tell at backward time that it was changed under it. Nothing else can write behind the
counter's back: ``.numpy()``, ``np.asarray(t)`` and DLPack export read-only views.

Fast paths: the shared :class:`~p10._methods.TensorMethods` operators route through P10's
functions and :func:`apply`, so that layers above observe every op. ``p10.Tensor`` overrides the
hottest of them (``+ - * / ** @``, comparisons, ``tanh``, ``exp``, ``sum``, ...) with methods that
call the kernel directly when every operand is a plain P10 tensor of one backend and one dtype;
then conversion, promotion and dispatch cannot change the result. Anything else, and any exception
from the kernel, takes the ordinary path, which also produces the named error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from p10 import _errors
from p10._backend import Backend, OpKey
from p10._errors import BackendError, DTypeError, MissingKernelError, P10Error
from p10._indexing import is_basic
from p10._methods import TensorMethods
from p10._ops import Op

# Ops whose NumPy kernel may return a view of its first input; the output then shares the
# input's version counter.
VIEW_OPS = frozenset({Op.RESHAPE, Op.PERMUTE, Op.BROADCAST_TO, Op.GETITEM, Op.FLIP})


_M = TensorMethods  # the shared methods: each fast path falls back to one of them
_new = object.__new__


def _named(method: Callable, slow: Callable) -> Callable:
    method.__name__ = slow.__name__
    method.__qualname__ = f"Tensor.{slow.__name__}"
    method.__doc__ = slow.__doc__
    method.__wrapped__ = slow  # type: ignore[attr-defined]  # inspect.signature shows slow's
    return method


def _fast_binary(
    op: Op, slow: Callable, floating: bool = False, reflected: bool = False
) -> Callable:
    """``slow`` with a direct kernel call when both operands share backend and dtype, or when
    the other operand is a Python int/float next to a floating tensor on a backend whose
    kernels take weak scalars (``reflected``: the scalar is the left operand, ``2 - x``)."""

    def method(self: Tensor, other: Any) -> Any:
        backend = self._backend
        cls = other.__class__
        a = self._data
        if cls is Tensor and other._backend is backend and not reflected:
            b = other._data
            # NOTE: the arrays' own dtype objects compared by identity: canonical instances in
            # NumPy, torch, dask, array-api-strict, and a false "no" only costs the slow path
            if not (
                a.dtype is b.dtype or (backend.weak_scalars and _bool_and_float(backend, a, b))
            ) or (floating and backend.dtype_of(a).kind != "f"):
                return slow(self, other)
            x, y = a, b
        elif (cls is float or cls is int) and backend.weak_scalars:
            # NOTE: floating tensors only: a weak scalar then never changes the dtype, and
            # never overflows it (an int8 tensor plus 300 takes the slow path and its error)
            if backend.dtype_of(a).kind != "f":
                return slow(self, other)
            x, y = (other, a) if reflected else (a, other)
        else:
            return slow(self, other)
        try:
            out = backend.kernels[op](x, y)
        except Exception:
            return slow(self, other)  # a missing kernel too: the slow path names it
        if out.__class__ is not backend.array_type:
            return wrap(out, backend)  # a 0-d input gives a NumPy scalar
        # NOTE: wrap() inlined; a call costs a sixth of the time budget
        t = _new(Tensor)
        t._data, t._backend, t._vc = out, backend, None
        return t

    return _named(method, slow)


def _bool_and_float(backend: Backend, a: Any, b: Any) -> bool:
    """A bool array next to a floating one: P10 promotes the bool to the float's dtype, as a
    NumPy-semantics kernel does by itself (True -> 1.0), so the kernel can take both as they
    are (the mask product ``g * (x > 0)`` of a backward)."""
    kinds = backend.dtype_of(a).kind + backend.dtype_of(b).kind
    return kinds == "bf" or kinds == "fb"


def _fast_inplace(op: Op, slow: Callable) -> Callable:
    """``slow`` (compute out of place, then write) with the backend's in-place kernel."""

    def method(self: Tensor, other: Any) -> Any:
        if self._inplace(op, other):
            return self
        return slow(self, other)

    return _named(method, slow)


def _fast_unary(op: Op, slow: Callable, floating: bool = False) -> Callable:
    """``slow`` with a direct kernel call (for ``floating`` ops only on floating tensors)."""

    def method(self: Tensor) -> Any:
        backend = self._backend
        if not floating or backend.dtype_of(self._data).kind == "f":
            try:
                out = backend.kernels[op](self._data)
            except Exception:
                pass
            else:
                if out.__class__ is not backend.array_type:
                    return wrap(out, backend)
                t = _new(Tensor)
                t._data, t._backend, t._vc = out, backend, None
                return t
        return slow(self)

    return _named(method, slow)


def _fast_axes(axis: Any, ndim: int) -> Any:
    """The kernel's ``axis`` param for one in-range int; ``False`` for anything else."""
    if axis.__class__ is int and -ndim <= axis < ndim:
        return (axis % ndim,)
    return False


def _fast_reduce(op: Op, slow: Callable, floating: bool = False) -> Callable:
    """``slow`` with a direct kernel call for ``axis`` None or one int (and no other args)."""

    def method(self: Tensor, axis: Any = None, keepdims: bool = False, *args, **kwargs) -> Any:
        backend = self._backend
        axes = None if axis is None else _fast_axes(axis, len(self._data.shape))
        if (
            axes is not False
            and not (args or kwargs)
            and (not floating or backend.dtype_of(self._data).kind == "f")
        ):
            try:
                out = backend.kernels[op](self._data, axis=axes, keepdims=keepdims)
            except Exception:
                pass
            else:
                if out.__class__ is not backend.array_type:
                    return wrap(out, backend)
                t = _new(Tensor)
                t._data, t._backend, t._vc = out, backend, None
                return t
        return slow(self, axis, keepdims, *args, **kwargs)

    return _named(method, slow)


class Tensor(TensorMethods):
    """An n-dimensional array of one dtype on one backend.

    >>> import p10
    >>> x = p10.asarray([[1.0, 2.0], [3.0, 4.0]])
    >>> (x @ x.T + 1).sum(axis=0)
    tensor([18., 38.], dtype=float32)
    """

    __slots__ = ("__weakref__", "_backend", "_data", "_vc")
    # NumPy defers to our reflected operators instead of converting us.
    __array_ufunc__ = None

    def __init__(self, data: Any, *, dtype: Any = None, backend: str | Backend | None = None):
        from p10._creation import asarray

        t = asarray(data, dtype=dtype, backend=backend)
        self._data, self._backend, self._vc = t._data, t._backend, None

    # -- fast paths of the hottest operators and methods (see the module docstring) --------
    __add__ = _fast_binary(Op.ADD, _M.__add__)
    __radd__ = _fast_binary(Op.ADD, _M.__radd__, reflected=True)
    __sub__ = _fast_binary(Op.SUB, _M.__sub__)
    __rsub__ = _fast_binary(Op.SUB, _M.__rsub__, reflected=True)
    __mul__ = _fast_binary(Op.MUL, _M.__mul__)
    __rmul__ = _fast_binary(Op.MUL, _M.__rmul__, reflected=True)
    __truediv__ = _fast_binary(Op.DIV, _M.__truediv__, floating=True)
    __rtruediv__ = _fast_binary(Op.DIV, _M.__rtruediv__, floating=True, reflected=True)
    __iadd__ = _fast_inplace(Op.ADD, _M.__iadd__)
    __isub__ = _fast_inplace(Op.SUB, _M.__isub__)
    __imul__ = _fast_inplace(Op.MUL, _M.__imul__)
    __itruediv__ = _fast_inplace(Op.DIV, _M.__itruediv__)
    add_ = _fast_inplace(Op.ADD, _M.add_)
    sub_ = _fast_inplace(Op.SUB, _M.sub_)
    mul_ = _fast_inplace(Op.MUL, _M.mul_)
    div_ = _fast_inplace(Op.DIV, _M.div_)
    __pow__ = _fast_binary(Op.POW, _M.__pow__)
    __matmul__ = _fast_binary(Op.MATMUL, _M.__matmul__)
    matmul = _fast_binary(Op.MATMUL, _M.matmul)
    __eq__ = _fast_binary(Op.EQ, _M.__eq__)  # type: ignore[assignment]
    __ne__ = _fast_binary(Op.NE, _M.__ne__)  # type: ignore[assignment]
    __lt__ = _fast_binary(Op.LT, _M.__lt__)
    __le__ = _fast_binary(Op.LE, _M.__le__)
    __gt__ = _fast_binary(Op.GT, _M.__gt__)
    __ge__ = _fast_binary(Op.GE, _M.__ge__)
    __hash__ = TensorMethods.__hash__  # defining __eq__ would otherwise remove it
    __neg__ = _fast_unary(Op.NEG, _M.__neg__)
    __abs__ = _fast_unary(Op.ABS, _M.__abs__)
    mean = _fast_reduce(Op.MEAN, _M.mean, floating=True)
    max = _fast_reduce(Op.MAX, _M.max)
    min = _fast_reduce(Op.MIN, _M.min)
    sum = _fast_reduce(Op.SUM, _M.sum)  # a dtype= argument takes the slow path

    # -- core attributes ------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        """The element type, a P10 dtype (``p10.float32``, ...)."""
        return self._backend.dtype_of(self._data)

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dimension."""
        return tuple(self._data.shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._data.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self._data.shape)

    @property
    def backend(self) -> Backend:
        """The backend whose kernels compute this tensor's ops."""
        return self._backend

    @property
    def device(self) -> str:
        """The device of the backend ('cpu' for NumPy)."""
        return self._backend.device

    @property
    def version(self) -> int:
        """How many in-place writes reached this tensor's memory (through any view).

        >>> import p10
        >>> x = p10.zeros(3); v = x.reshape((3, 1)); v += 1
        >>> x.version, v.version
        (1, 1)
        """
        return 0 if self._vc is None else self._vc[0]

    def numpy(self) -> np.ndarray:
        """The value as a read-only NumPy array (``np.array(t)`` gives a writable copy).

        It may share this tensor's memory, so its ``WRITEABLE`` flag cannot be turned back on:
        a write would go behind the version counter (and change values saved for backward).

        >>> import p10
        >>> a = p10.ones((2,)).numpy(); a
        array([1., 1.], dtype=float32)
        >>> a.flags.writeable = True
        Traceback (most recent call last):
        ...
        ValueError: cannot set WRITEABLE flag to True of this array
        """
        return _read_only(self._backend.to_numpy(self._data))

    def _host(self) -> np.ndarray:
        # NOTE: the backend's NumPy value, possibly this tensor's own memory: for reading
        # here (item, tolist, repr), never handed out
        return self._backend.to_numpy(self._data)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.numpy()
        if dtype is not None and out.dtype != dtype:
            if copy is False:
                raise _errors.ArgumentError(
                    f"__array__: converting {out.dtype} to {dtype} needs a copy, but copy=False"
                )
            return out.astype(dtype)
        return out.copy() if copy else out

    def item(self) -> bool | int | float:
        """The value of a one-element tensor as a Python scalar.

        >>> import p10
        >>> p10.asarray([[3.5]]).item()
        3.5
        """
        if self.size != 1:
            raise _errors.ShapeError(
                f"item: tensor of shape {self.shape} has {self.size} elements, not 1; "
                "reduce it first (e.g. .sum()) or index one element"
            )
        return self._host().reshape(()).item()

    def tolist(self) -> Any:
        """The value as nested Python lists.

        >>> import p10
        >>> p10.arange(3).tolist()
        [0, 1, 2]
        """
        return self._host().tolist()

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __repr__(self) -> str:
        arr = self._host()
        body = np.array2string(arr, separator=", ", prefix="tensor(")
        dt = self.dtype
        suffix = f", shape={arr.shape}" if arr.size == 0 and arr.ndim != 1 else ""
        suffix += "" if dt == np.int64 or dt == np.bool_ else f", dtype={dt.name}"
        if self._backend.name != "numpy":
            suffix += f", backend='{self._backend.name}'"
        return f"tensor({body}{suffix})"

    def to(
        self, dtype: Any = None, *, backend: str | Backend | None = None, device: Any = None
    ) -> Tensor:
        """This tensor on another backend, device and/or dtype (a copy when changed).

        >>> import p10
        >>> p10.ones(2).to("float64").dtype, p10.ones(2).to(device="cpu").device
        (dtype('float64'), 'cpu')
        """
        from p10._creation import asarray

        if backend is None and dtype is None and device is None:
            return self
        target = backend if backend else self._backend
        return asarray(self, dtype=dtype, backend=target, device=device)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        # NOTE: DLPack >= 1.0 carries a read-only flag, so modern consumers share memory without
        # being able to write behind the version counter; older ones get a copy. The exporter is
        # the host (NumPy) view: ``stream`` must be None, ``dl_device`` the CPU (NumPy checks).
        view = self.numpy()
        kwargs = {"stream": stream, "dl_device": dl_device, "copy": copy}
        if max_version is None or max_version < (1, 0):
            return np.array(view).__dlpack__(**kwargs)
        return view.__dlpack__(max_version=max_version, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._host().__dlpack_device__()

    # -- in-place writes ---------------------------------------------------------------------
    def _assign(self, result: Tensor) -> Tensor:
        """Write a same-shaped ``result`` into this tensor's memory and bump the version."""
        if result.shape != self.shape:
            raise _errors.ShapeError(
                f"in-place op: result of shape {result.shape} does not fit the tensor's shape "
                f"{self.shape}; an in-place op cannot change the shape (use the out-of-place form)"
            )
        self._write(Ellipsis, result)
        return self

    def _setitem(self, key: Any, value: Any) -> None:
        from p10._elementwise import operand
        from p10._index_ops import drop_0d_masks, normalize_key
        from p10._indexing import fill_key

        key = drop_0d_masks(key)
        if key is None:
            return  # a False 0-d mask selects nothing
        k, tensors = normalize_key(self, key, "setitem")
        self._write(fill_key(k, tuple(t._data for t in tensors)), operand(value, self))

    def _write(self, key: Any, value: Tensor) -> None:
        if value.dtype != self.dtype and not np.can_cast(value.dtype, self.dtype, "same_kind"):
            raise DTypeError(
                f"in-place write: cannot store {value.dtype.name} values into a tensor of "
                f"dtype {self.dtype.name}; compute out of place or cast the values first"
            )
        setitem = self._backend.setitem
        if setitem is None:
            raise MissingKernelError(
                f"setitem: backend '{self._backend.name}' cannot write in place; use the "
                "out-of-place p10.index_put or move the tensor with .to(backend='numpy')"
            )
        try:
            setitem(self._data, key, value._data)
        except ValueError as e:
            hint = "make a copy first with .copy()" if "read-only" in str(e) else "check shapes"
            raise _errors.ShapeError(
                f"in-place write into {self.shape} {self.dtype.name} tensor: {e}; {hint}"
            ) from e
        except IndexError as e:
            raise _errors.IndexOutOfRangeError(f"setitem on shape {self.shape}: {e}") from e
        self._bump_version()

    def _inplace(self, op: Op, other: Any) -> bool:
        """``self op= other`` with the backend's in-place kernel; False (nothing written) when
        the backend has none or the operands do not qualify: the caller takes the general path.

        It qualifies when ``other`` is a tensor of this dtype and backend, or a Python int or
        float next to a floating tensor; the kernel raises before writing when the result
        does not fit (shape, dtype, read-only memory), and the general path reports that.
        """
        backend = self._backend
        kernel = backend.inplace.get(op)
        if kernel is None:
            return False
        a = self._data
        cls = other.__class__
        if cls is Tensor:
            if other._backend is not backend or other._data.dtype is not a.dtype:
                return False
            b = other._data
        elif (cls is float or cls is int) and backend.weak_scalars:
            b = other
        else:
            return False
        if backend.dtype_of(a).kind not in "fc":
            return False  # integer writes keep the general path's overflow and dtype errors
        try:
            kernel(a, b)
        except FloatingPointError:
            self._bump_version()  # np.seterr(all="raise"): the values were written
            raise
        except Exception:
            return False
        self._bump_version()
        return True

    def _bump_version(self) -> None:
        if self._vc is None:
            self._vc = [0]
        self._vc[0] += 1

    def _share_version(self, base: Tensor) -> None:
        if base._vc is None:
            base._vc = [0]
        self._vc = base._vc


def _read_only(out: np.ndarray) -> np.ndarray:
    """``out`` as an array that nobody can make writable: a view whose base is a read-only
    buffer (a plain view's WRITEABLE flag can be set back to True by anyone)."""
    if not out.flags.writeable:
        return out
    try:
        return np.asarray(memoryview(out).toreadonly())
    except (TypeError, ValueError, BufferError):  # a dtype without a buffer format
        out = out.view()
        out.flags.writeable = False
        return out


def wrap(data: Any, backend: Backend) -> Tensor:
    """Wrap a backend array (or a NumPy scalar a kernel returned) as a Tensor, without copying."""
    if data.__class__ is not backend.array_type:
        data = backend.from_numpy(np.asarray(data))
    t = object.__new__(Tensor)
    t._data = data
    t._backend = backend
    t._vc = None
    return t


def apply(op: OpKey, *inputs: Any, **params: Any) -> Any:
    """Run ``op`` on tensor inputs with keyword params; the entry point of every P10 function.

    An input whose type defines ``__p10_apply__(op, inputs, params)`` (as ``tpx.Tensor``
    does) takes over the call: that is how layers above P10 observe every operation.

    >>> import p10
    >>> apply(Op.ADD, p10.ones((2,)), p10.ones((2,)))
    tensor([2., 2.], dtype=float32)
    """
    for x in inputs:
        if x.__class__ is not Tensor:
            override = getattr(x.__class__, "__p10_apply__", None)
            if override is None:
                raise DTypeError(f"{op.value}: expected tensors, got {type(x).__name__}")
            return override(op, inputs, params)
    return execute(op, inputs, params)


def execute(op: OpKey, inputs: tuple[Tensor, ...], params: dict[str, Any]) -> Tensor:
    """Run the kernel of ``op`` on P10 tensors (all of one backend) and wrap the result.

    >>> import p10
    >>> execute(Op.MUL, (p10.ones(2), p10.full(2, 3.0)), {}).tolist()
    [3.0, 3.0]
    """
    backend = inputs[0]._backend
    arrays = []
    for x in inputs:
        if x._backend is not backend:
            raise _mixed_backends(op, inputs)
        arrays.append(x._data)
    kernel = backend.kernels.get(op) or backend.kernel(op)
    try:
        out = kernel(*arrays, **params)
    except P10Error:
        raise
    except Exception as e:
        raise kernel_error(op, inputs, params, e) from e
    if out.__class__ is backend.array_type:
        result = _new(Tensor)
        result._data, result._backend, result._vc = out, backend, None
    else:
        result = wrap(out, backend)
    if (
        op in VIEW_OPS
        and (op is not Op.GETITEM or is_basic(params["key"]))
        and backend.may_share_memory(out, arrays[0])
    ):
        result._share_version(inputs[0])
    return result


def _mixed_backends(op: OpKey, inputs: tuple[Tensor, ...]) -> BackendError:
    names = ", ".join(f"{t.shape} on '{t._backend.name}'" for t in inputs)
    return BackendError(
        f"{op.value}: inputs live on different backends ({names}); move them to one with "
        f".to(backend='{inputs[0]._backend.name}')"
    )


def kernel_error(op: OpKey, inputs: tuple, params: dict, e: Exception) -> P10Error:
    """Turn a backend's exception into a P10 error that names the op, the inputs and the fix."""
    where = f"{op.value}: inputs {_errors.describe(inputs)}"
    if params and op not in (Op.GETITEM, Op.INDEX_ADD, Op.INDEX_PUT):
        where += f", params {params}"
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    if isinstance(e, np.exceptions.AxisError):
        return _errors.AxisError(f"{where}: {msg}; axes must lie in [-ndim, ndim)")
    if isinstance(e, IndexError):
        return _errors.IndexOutOfRangeError(f"{where}: {msg}; check the index against the shape")
    if isinstance(e, ValueError) and "broadcast" in msg:
        return _errors.ShapeError(
            f"{where}: shapes do not broadcast ({msg}); sizes must be equal or 1 on each axis "
            "counted from the right; insert axes with unsqueeze/reshape"
        )
    if isinstance(e, TypeError) or "not supported for the input types" in msg:
        return DTypeError(f"{where}: not defined for these dtypes ({msg}); cast with .astype()")
    if isinstance(e, NotImplementedError):
        return MissingKernelError(f"{where}: {msg}")
    if isinstance(e, ValueError):
        return _errors.ArgumentError(f"{where}: {msg}")
    return _errors.P10Error(f"{where}: {msg}")
