"""The kernel table of the generic Array API backend: every P10 op from standard functions.

:class:`Lib` holds what the kernels of one (library, device) pair need; :func:`generic_kernels`
builds the full table for it (see :mod:`p10.backends.array_api_backend` for the order in which
standard, library-specific and fallback kernels are chosen).

>>> import numpy as np
>>> lib = Lib(np, "cpu", "demo", *dtype_tables(np))
>>> generic_kernels(lib)[Op.LOGSUMEXP](np.zeros(2), axis=None).round(4).item()
0.6931
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

from p10._errors import MissingKernelError
from p10._ops import SPEC_OF, Op
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
    persist: Callable[[list[Any]], list[Any]] | None = None  # set by a lazy library (Dask)
    compute: Callable[[list[Any]], list[np.ndarray]] | None = None

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


def dtype_tables(xp: ModuleType) -> tuple[dict[Any, np.dtype], dict[np.dtype, Any]]:
    """The maps between a namespace's dtypes and NumPy's, both ways."""
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
def _standard(lib: Lib, arity: int) -> dict[Op, Kernel]:
    """The kernels of the op-spec entries that the Array API names as P10 does (``spec.xp``);
    one the namespace lacks gets the host fallback or the missing-kernel error (see
    :func:`generic_kernels`)."""
    return {
        op: getattr(lib.xp, spec.function_name)
        for op, spec in SPEC_OF.items()
        if spec.xp and spec.arity == arity and hasattr(lib.xp, spec.function_name)
    }


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
        **_standard(lib, arity=1),
        Op.RECIPROCAL: lambda x: 1.0 / x,
        Op.SIGMOID: sigmoid,
        Op.RELU: relu,
        Op.GELU: gelu_tanh,  # replaced below by one that also does approximate="none"
        Op.CLIP: clip,
        Op.CAST: lambda x, *, dtype: lib.cast(x, dtype),
        Op.COPY: lambda x: xp.asarray(x, copy=True),
        Op.LOGICAL_NOT: logical(xp.logical_not),
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

    table = _standard(lib, arity=2)
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

    def tri(x, k, lower):
        n, m = x.shape[-2], x.shape[-1]
        rows = xp.reshape(xp.arange(n), (n, 1))
        cols = xp.reshape(xp.arange(m), (1, m))
        keep = (cols - rows <= k) if lower else (cols - rows >= k)
        return xp.where(keep, x, xp.zeros_like(x))

    def topk(x, *, k, axis, largest=True):
        order = xp.argsort(x, axis=axis, descending=largest, stable=True)
        key = (slice(None),) * axis + (slice(0, k),)
        return xp.astype(order[key], xp.int64)

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
        Op.ROLL: lambda x, *, shifts, axes: xp.roll(x, shift=tuple(shifts), axis=tuple(axes)),
        Op.TRIL: lambda x, *, k=0: tri(x, k, True),
        Op.TRIU: lambda x, *, k=0: tri(x, k, False),
        Op.TOPK: topk,
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

    return _on_host(lib, numpy_backend.KERNELS[op])


def _on_host(lib: Lib, spec: Kernel) -> Kernel:
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
        return _on_host(self.lib, spec)


def _gelu(erf: Kernel, tanh_form: Kernel) -> Kernel:
    def gelu(x, *, approximate="none"):
        if approximate == "tanh":
            return tanh_form(x)
        return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))

    return gelu


# Ops the standard lacks, and op-spec entries the namespace lacks: NumPy's kernel on the host
_OUTSIDE = (Op.ERF, Op.EINSUM, *SPEC_OF)


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
            why = f"not in the Array API standard or not in {lib.xp.__name__}"
            table[op] = host_fallback(lib, op) if lib.cpu else missing(lib, op, why)
    if Op.GELU not in (extras or {}):
        table[Op.GELU] = _gelu(table[Op.ERF], table[Op.GELU])
    missing_ops = [op.value for op in Op if op not in table]
    assert not missing_ops, f"array API backend lacks {missing_ops}"
    return KernelTable(table, lib)
