"""One generic P10 backend for every library that implements the Python Array API standard.

:func:`make_array_api_backend` builds a :class:`p10.Backend` whose kernels call only functions of
the standard, through the namespace that ``array_api_compat.array_namespace`` gives for the
library (array-api-strict, PyTorch, Dask, CuPy, JAX, NumPy). Every kernel matches the NumPy
spec backend: mixed dtypes are promoted by NumPy's table first (the standard leaves int/float
mixes undefined), and reductions return NumPy's dtypes.

Kernels outside the standard get, in this order:

1. a library-specific kernel from an *extras* table (``torch_extras``, ``dask_extras``, or the
   ``extras=`` argument), e.g. ``torch.nn.functional.conv2d`` or a lazy ``map_blocks`` erf;
2. a composition of standard functions (conv2d, pooling, unfold/fold, pad, tile, gathers and
   scatters through a flat index) in :mod:`p10.backends.array_api_nn` and
   :mod:`p10.backends.array_api_index`;
3. on a CPU device only, a *host fallback*: the NumPy spec kernel run on a copy of the inputs
   (``erf`` and ``einsum`` on array-api-strict). On an accelerator the op raises
   :class:`p10.MissingKernelError` naming op and backend instead of copying silently.

Importing this module imports neither the libraries nor ``array_api_compat``; the factory does.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np

from p10._backend import Backend
from p10._errors import BackendError, MissingKernelError
from p10._ops import Op
from p10.backends import array_api_index, array_api_nn

Kernel = Callable[..., Any]
# Every dtype a kernel may produce; the P10 set plus what NumPy's reductions can return.
_DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
)  # fmt: skip


@dataclass(eq=False)
class Lib:
    """What the kernels of one (library, device) pair need: the namespace, the device and the
    dtype tables between the library's dtypes and NumPy's."""

    xp: ModuleType
    device: Any
    name: str
    np_of: dict[Any, np.dtype] = field(default_factory=dict)
    xp_of: dict[np.dtype, Any] = field(default_factory=dict)
    to_numpy: Callable[[Any], np.ndarray] = np.asarray
    from_numpy: Callable[[np.ndarray], Any] = np.asarray
    cpu: bool = True
    may_share: Callable[[Any, Any], bool] | None = None

    def dtype(self, a: Any) -> np.dtype:
        """The NumPy dtype of a library array."""
        return self.np_of[a.dtype]

    def full(self, shape: tuple[int, ...], value: Any, like: Any) -> Any:
        """A new array of ``like``'s dtype and device filled with ``value``."""
        return self.xp.full(shape, value, dtype=like.dtype, device=self.device)

    def cast(self, a: Any, dt: np.dtype) -> Any:
        """``a`` converted to the NumPy dtype ``dt`` (itself when it has it already)."""
        target = self.xp_of[np.dtype(dt)]
        return a if a.dtype == target else self.xp.astype(a, target)

    def promote(self, *arrays: Any) -> list[Any]:
        """The arrays cast to their common dtype under NumPy's promotion table."""
        first = arrays[0].dtype
        if all(a.dtype == first for a in arrays):
            return list(arrays)
        target = np.result_type(*[self.dtype(a) for a in arrays])
        return [self.cast(a, target) for a in arrays]

    def host_index(self, a: Any) -> np.ndarray:
        """An index array as NumPy (indices are small; the data never goes to the host)."""
        return np.asarray(self.to_numpy(a))


def _dtype_tables(xp: ModuleType) -> tuple[dict[Any, np.dtype], dict[np.dtype, Any]]:
    np_of: dict[Any, np.dtype] = {}
    xp_of: dict[np.dtype, Any] = {}
    for name in _DTYPE_NAMES:
        d = getattr(xp, name, None)
        if d is None:
            continue
        npd = np.dtype(name)
        np_of[d] = npd
        xp_of[npd] = d
        # Dask and NumPy spell dtypes as NumPy scalar types, their arrays carry np.dtype
        with contextlib.suppress(TypeError):
            np_of[np.dtype(d)] = npd
    return np_of, xp_of


@cache
def _reduce_dtype(ufunc: np.ufunc, dt: np.dtype) -> np.dtype:
    """The dtype NumPy's ``ufunc.reduce`` gives for ``dt`` (sum of int32 is int64, ...)."""
    return ufunc.reduce(np.zeros(1, dt)).dtype


# -- elementwise -------------------------------------------------------------------------------
def _unary(lib: Lib) -> dict[Op, Kernel]:
    xp = lib.xp

    def relu(x):
        # NOTE: maximum keeps NaN, as the spec (np.maximum) and torch.relu do.
        return xp.maximum(x, xp.zeros((), dtype=x.dtype, device=lib.device))

    def sigmoid(x):
        # exp of -|x| never overflows; each branch is exact on its half-line.
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))

    def gelu_tanh(x):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + xp.tanh(inner))

    def clip(x, *, min=None, max=None):
        if min is None and max is None:
            return xp.asarray(x, copy=True)
        return xp.clip(x, min, max)

    def logical(fn):
        return lambda x: fn(x if x.dtype == xp.bool else xp.astype(x, xp.bool))

    return {
        Op.NEG: xp.negative,
        Op.ABS: xp.abs,
        Op.EXP: xp.exp,
        Op.LOG: xp.log,
        Op.LOG1P: xp.log1p,
        Op.EXPM1: xp.expm1,
        Op.SQRT: xp.sqrt,
        Op.SQUARE: xp.square,
        Op.RECIPROCAL: lambda x: 1.0 / x,
        Op.SIN: xp.sin,
        Op.COS: xp.cos,
        Op.TAN: xp.tan,
        Op.TANH: xp.tanh,
        Op.SIGMOID: sigmoid,
        Op.RELU: relu,
        Op.GELU: gelu_tanh,  # replaced below by one that also does approximate="none"
        Op.SIGN: xp.sign,
        Op.FLOOR: xp.floor,
        Op.CEIL: xp.ceil,
        Op.ROUND: xp.round,
        Op.CLIP: clip,
        Op.CAST: lambda x, *, dtype: lib.cast(x, dtype),
        Op.COPY: lambda x: xp.asarray(x, copy=True),
        Op.LOGICAL_NOT: logical(xp.logical_not),
        Op.BITWISE_INVERT: xp.bitwise_invert,
        Op.ISNAN: xp.isnan,
        Op.ISINF: xp.isinf,
        Op.ISFINITE: xp.isfinite,
    }


def _binary(lib: Lib) -> dict[Op, Kernel]:
    xp = lib.xp

    def promoted(fn: Kernel) -> Kernel:
        def kernel(a, b):
            if a.dtype != b.dtype:
                a, b = lib.promote(a, b)
            return fn(a, b)

        return kernel

    def logical(fn: Kernel) -> Kernel:
        def kernel(a, b):
            return fn(*[x if x.dtype == xp.bool else xp.astype(x, xp.bool) for x in (a, b)])

        return kernel

    def where(c, a, b):
        return xp.where(c, *lib.promote(a, b))

    table = {
        Op.ADD: xp.add, Op.SUB: xp.subtract, Op.MUL: xp.multiply, Op.DIV: xp.divide,
        Op.FLOORDIV: xp.floor_divide, Op.MOD: xp.remainder, Op.POW: xp.pow,
        Op.MAXIMUM: xp.maximum, Op.MINIMUM: xp.minimum, Op.EQ: xp.equal, Op.NE: xp.not_equal,
        Op.LT: xp.less, Op.LE: xp.less_equal, Op.GT: xp.greater, Op.GE: xp.greater_equal,
        Op.BITWISE_AND: xp.bitwise_and, Op.BITWISE_OR: xp.bitwise_or,
        Op.BITWISE_XOR: xp.bitwise_xor,
    }  # fmt: skip
    out: dict[Op, Kernel] = {op: promoted(fn) for op, fn in table.items()}
    out[Op.LOGICAL_AND] = logical(xp.logical_and)
    out[Op.LOGICAL_OR] = logical(xp.logical_or)
    out[Op.LOGICAL_XOR] = logical(xp.logical_xor)
    out[Op.WHERE] = where
    return out


# -- reductions --------------------------------------------------------------------------------
def _reductions(lib: Lib) -> dict[Op, Kernel]:
    xp = lib.xp

    def accumulating(fn: Kernel, ufunc: np.ufunc) -> Kernel:
        def kernel(x, *, axis=None, keepdims=False):
            dt = _reduce_dtype(ufunc, lib.dtype(x))
            x = lib.cast(x, dt)  # the standard sums no bools and keeps small ints small
            return fn(x, axis=axis, keepdims=keepdims, dtype=lib.xp_of[dt])

        return kernel

    def extremum(fn: Kernel, boolean: Kernel) -> Kernel:
        def kernel(x, *, axis=None, keepdims=False):
            f = boolean if x.dtype == xp.bool else fn
            return f(x, axis=axis, keepdims=keepdims)

        return kernel

    def arg(fn: Kernel) -> Kernel:
        def kernel(x, *, axis=None, keepdims=False):
            return lib.cast(fn(x, axis=axis, keepdims=keepdims), np.dtype("int64"))

        return kernel

    def cumsum(x, *, axis=0):
        dt = np.cumsum(np.zeros(1, lib.dtype(x))).dtype
        return xp.cumulative_sum(lib.cast(x, dt), axis=axis)

    def logsumexp(x, *, axis=None, keepdims=False):
        m = xp.max(x, axis=axis, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
        out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
        if keepdims:
            return out
        return xp.reshape(out, () if axis is None else _drop(out.shape, axis))

    return {
        Op.SUM: accumulating(xp.sum, np.add),
        Op.PROD: accumulating(xp.prod, np.multiply),
        Op.MEAN: lambda x, *, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims),
        Op.MAX: extremum(xp.max, xp.any),
        Op.MIN: extremum(xp.min, xp.all),
        Op.ARGMAX: arg(xp.argmax),
        Op.ARGMIN: arg(xp.argmin),
        Op.VAR: lambda x, *, axis=None, keepdims=False, correction=0.0: xp.var(
            x, axis=axis, keepdims=keepdims, correction=correction
        ),
        Op.LOGSUMEXP: logsumexp,
        Op.CUMSUM: cumsum,
        Op.ALL: lambda x, *, axis=None, keepdims=False: xp.all(x, axis=axis, keepdims=keepdims),
        Op.ANY: lambda x, *, axis=None, keepdims=False: xp.any(x, axis=axis, keepdims=keepdims),
    }


def _drop(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(s for i, s in enumerate(shape) if i not in axes)


# -- linear algebra and shape ------------------------------------------------------------------
def _structural(lib: Lib) -> dict[Op, Kernel]:
    xp = lib.xp

    def matmul(a, b):
        return xp.matmul(*lib.promote(a, b))

    def tensordot(a, b, *, axes):
        return xp.tensordot(*lib.promote(a, b), axes=axes)

    def concat(*arrays, axis=0):
        return xp.concat(lib.promote(*arrays), axis=axis)

    def flip(x, *, axis=None):
        return x if axis == () else xp.flip(x, axis=axis)

    return {
        Op.MATMUL: matmul,
        Op.TENSORDOT: tensordot,
        Op.RESHAPE: lambda x, *, shape: xp.reshape(x, tuple(shape)),
        Op.PERMUTE: lambda x, *, axes: xp.permute_dims(x, tuple(axes)),
        Op.BROADCAST_TO: lambda x, *, shape: xp.broadcast_to(x, tuple(shape)),
        Op.CONCAT: concat,
        Op.FLIP: flip,
        Op.TILE: lambda x, *, reps: array_api_nn.tile(xp, x, tuple(reps)),
        Op.REPEAT: lambda x, *, repeats, axis=None: array_api_nn.repeat(xp, x, repeats, axis),
        Op.PAD: lambda x, *, pad_width, value=0: array_api_nn.pad(lib, x, pad_width, value),
    }


def _softmax(lib: Lib) -> dict[Op, Kernel]:
    xp = lib.xp

    def softmax(x, *, axis=-1):
        e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
        return e / xp.sum(e, axis=axis, keepdims=True)

    def log_softmax(x, *, axis=-1):
        shifted = x - xp.max(x, axis=axis, keepdims=True)
        return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))

    return {Op.SOFTMAX: softmax, Op.LOG_SOFTMAX: log_softmax}


# -- outside the standard ----------------------------------------------------------------------
def host_fallback(lib: Lib, op: Op) -> Kernel:
    """The NumPy spec kernel of ``op`` run on host copies of the inputs (CPU devices only)."""
    from p10.backends import numpy_backend

    spec = numpy_backend.KERNELS[op]

    def kernel(*arrays, **params):
        out = spec(*[lib.to_numpy(a) for a in arrays], **params)
        return lib.from_numpy(np.asarray(out))

    return kernel


def missing(lib: Lib, op: Op, why: str) -> Kernel:
    """A kernel that raises :class:`MissingKernelError` naming ``op`` and the backend."""

    def kernel(*arrays, **params):
        raise MissingKernelError(
            f"{op.value}: backend '{lib.name}' has no kernel for this op ({why}); register one "
            f"with p10.register_kernel(p10.Op.{op.name}, '{lib.name}', fn) or move the "
            "tensors with .to(backend='numpy')"
        )

    return kernel


class KernelTable(dict):
    """A kernel table that lends the NumPy kernels of ops defined with :func:`p10.define_op`
    to a CPU backend through the host, so user-defined ops run on every backend."""

    def __init__(self, table: dict[Any, Kernel], lib: Lib) -> None:
        super().__init__(table)
        self.lib = lib

    def __missing__(self, op: Any) -> Kernel:
        from p10._backend import _registry

        spec = _registry["numpy"].kernels.get(op) if "numpy" in _registry else None
        if spec is None or isinstance(op, Op) or not self.lib.cpu:
            raise KeyError(op)
        lib = self.lib

        def kernel(*arrays, **params):
            out = spec(*[lib.to_numpy(a) for a in arrays], **params)
            return lib.from_numpy(np.asarray(out))

        return kernel


def _gelu(erf: Kernel, tanh_form: Kernel) -> Kernel:
    def gelu(x, *, approximate="none"):
        if approximate == "tanh":
            return tanh_form(x)
        return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))

    return gelu


_OUTSIDE = (Op.ERF, Op.EINSUM)


def generic_kernels(lib: Lib, extras: dict[Op, Kernel] | None = None) -> dict[Op, Kernel]:
    """The full kernel table of ``lib``: standard kernels, then ``extras`` over them, then a
    host fallback (CPU) or a :class:`MissingKernelError` kernel for the rest."""
    table: dict[Op, Kernel] = {}
    for part in (_unary, _binary, _reductions, _structural, _softmax):
        table.update(part(lib))
    table.update(array_api_nn.kernels(lib))
    table.update(array_api_index.kernels(lib))
    if hasattr(lib.xp, "einsum"):
        table[Op.EINSUM] = lambda *ops, subscripts: lib.xp.einsum(subscripts, *lib.promote(*ops))
    table.update(extras or {})
    for op in _OUTSIDE:
        if op not in table:
            why = "not in the Array API standard"
            table[op] = host_fallback(lib, op) if lib.cpu else missing(lib, op, why)
    if Op.GELU not in (extras or {}):
        table[Op.GELU] = _gelu(table[Op.ERF], table[Op.GELU])
    missing_ops = [op.value for op in Op if op not in table]
    assert not missing_ops, f"array API backend lacks {missing_ops}"
    return KernelTable(table, lib)


# -- the factory -------------------------------------------------------------------------------
def namespace_of(xp_or_name: ModuleType | str) -> ModuleType:
    """The ``array_api_compat`` namespace of a library given by module or import name.

    >>> import pytest; _ = pytest.importorskip("array_api_compat")
    >>> namespace_of("numpy").__name__
    'array_api_compat.numpy'
    """
    import importlib

    try:
        import array_api_compat
    except ImportError:
        raise BackendError(
            "array API backends need the array-api-compat package; "
            "pip install -r requirements-backends.txt"
        ) from None
    if isinstance(xp_or_name, str):
        module = {"dask": "dask.array", "jax": "jax.numpy"}.get(xp_or_name, xp_or_name)
        try:
            xp_or_name = importlib.import_module(module)
        except ImportError as e:
            raise BackendError(
                f"array API backend '{xp_or_name}': cannot import {module} ({e}); install it, "
                "e.g. pip install -r requirements-backends.txt"
            ) from None
    probe = xp_or_name.asarray([0])
    return array_api_compat.array_namespace(probe)


def make_array_api_backend(
    xp_or_name: ModuleType | str,
    device: Any = None,
    *,
    name: str | None = None,
    extras: dict[Op, Kernel] | None = None,
    host_fallback: bool | None = None,
) -> Backend:
    """A :class:`p10.Backend` running every op through the Array API namespace of a library.

    ``xp_or_name`` is a module ("array_api_strict", "torch", "dask", "cupy", "jax", "numpy" or
    the module itself); ``device`` one of the library's devices (``None``: its default).
    ``extras`` adds or replaces kernels (see :mod:`p10.backends.torch_extras`). The backend is
    not registered; pass it to :func:`p10.register_backend` or use :func:`p10.backends.enable`.

    >>> import p10, pytest; _ = pytest.importorskip("array_api_compat")
    >>> b = make_array_api_backend("numpy", name="compat_numpy")
    >>> with p10.register_backend(b):
    ...     x = p10.asarray([[1.0, -2.0]], backend="compat_numpy")
    ...     x.relu().sum().item(), type(x._data).__name__
    (1.0, 'ndarray')
    """
    xp = namespace_of(xp_or_name)
    label = name or _library_name(xp)
    try:
        lib = _make_lib(xp, device, label)
        array_type = type(lib.from_numpy(np.zeros(1, np.float32)))
    except Exception as e:
        raise BackendError(f"backend '{label}': cannot use device {device!r}: {e}") from e
    if host_fallback is not None:
        lib.cpu = host_fallback
    return Backend(
        name=label,
        kernels=generic_kernels(lib, _library_extras(lib, extras)),
        array_type=array_type,
        from_numpy=lib.from_numpy,
        to_numpy=lib.to_numpy,
        dtype_of=lib.dtype,
        setitem=_setitem,
        may_share_memory=_may_share_memory(lib),
        device="cpu" if lib.cpu else str(lib.device),
    )


def _library_name(xp: ModuleType) -> str:
    short = xp.__name__.removeprefix("array_api_compat.")
    return {"dask.array": "dask", "jax.numpy": "jax"}.get(short, short)


def _make_lib(xp: ModuleType, device: Any, label: str) -> Lib:
    import array_api_compat

    np_of, xp_of = _dtype_tables(xp)
    default = array_api_compat.device(xp.asarray([0]))
    on_cpu = "cpu" in str(default).lower()
    dev = default if device is None or (str(device) == "cpu" and on_cpu) else device
    lib = Lib(xp, dev, label, np_of, xp_of)
    kind = _library_name(xp)
    if kind == "torch":
        from p10.backends import torch_extras as extras_module
    elif kind == "dask":
        from p10.backends import dask_extras as extras_module
    else:
        extras_module = None
    if extras_module is not None:
        extras_module.configure(lib)
    else:
        lib.from_numpy = lambda a: xp.asarray(a, device=dev, copy=True)
        lib.to_numpy = _generic_to_numpy
        lib.cpu = "cpu" in str(dev).lower()
    return lib


def _library_extras(lib: Lib, extras: dict[Op, Kernel] | None) -> dict[Op, Kernel]:
    table: dict[Op, Kernel] = {}
    kind = _library_name(lib.xp)
    if kind == "torch":
        from p10.backends import torch_extras

        table.update(torch_extras.kernels(lib))
    elif kind == "dask":
        from p10.backends import dask_extras

        table.update(dask_extras.kernels(lib))
    table.update(extras or {})
    return table


def _generic_to_numpy(a: Any) -> np.ndarray:
    try:
        return np.from_dlpack(a)
    except (TypeError, RuntimeError, BufferError, AttributeError):
        return np.asarray(a)


def _setitem(dst: Any, key: Any, value: Any) -> None:
    if type(key) is tuple and any(type(k) is not slice and hasattr(k, "shape") for k in key):
        dst[key] = value  # an advanced key: passed on as it is
    else:
        dst[array_api_index.full_key(key)] = value


def _may_share_memory(lib: Lib) -> Callable[[Any, Any], bool]:
    if lib.may_share is not None:
        return lib.may_share

    def share(a: Any, b: Any) -> bool:
        try:
            return bool(np.may_share_memory(lib.to_numpy(a), lib.to_numpy(b)))
        except (TypeError, ValueError, BufferError, RuntimeError):
            return True  # unknown: share the version counter, the safe side

    return share
