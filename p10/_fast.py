"""Direct-kernel shortcuts of ``p10.Tensor``'s hottest operators and methods.

The shared :class:`~p10._methods.TensorMethods` operators route through P10's functions and
:func:`~p10.apply`, so that layers above observe every op. ``p10.Tensor`` overrides the hottest
of them (``+ - * / ** @``, comparisons, ``tanh``, ``exp``, ``sum``, ...) with methods that call
the kernel directly when every operand is a plain P10 tensor of one backend and one dtype; then
conversion, promotion and dispatch cannot change the result. Anything else, and any exception
from the kernel, takes the ordinary path, which also produces the named error. The shortcuts
are listed in :data:`SHORTCUTS` (and, for the op-spec table's methods, by ``spec.fast``).

>>> import p10
>>> p10.Tensor.__add__.__wrapped__ is p10._methods.TensorMethods.__add__
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p10._backend import Backend
from p10._methods import TensorMethods
from p10._numpy_special import REAL_UFUNC
from p10._ops import SPEC_OF, Op
from p10._tensor import Tensor, _fast_axes, wrap

_new = object.__new__


def _named(method: Callable, slow: Callable) -> Callable:
    method.__name__ = slow.__name__
    method.__qualname__ = f"Tensor.{slow.__name__}"
    method.__doc__ = slow.__doc__
    method.__wrapped__ = slow  # type: ignore[attr-defined]  # inspect.signature shows slow's
    return method


def fast_binary(
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


def fast_inplace(op: Op, slow: Callable) -> Callable:
    """``slow`` (compute out of place, then write) with the backend's in-place kernel."""

    def method(self: Tensor, other: Any) -> Any:
        if self._inplace(op, other):
            return self
        return slow(self, other)

    return _named(method, slow)


def fast_unary(op: Op, slow: Callable, floating: bool = False) -> Callable:
    """``slow`` with a direct kernel call (for ``floating`` ops only on floating tensors).

    A ``floating`` op whose NumPy kernel only corrects complex special values (``tanh``) runs
    the bare ufunc instead while that kernel is the backend's (not overridden or wrapped)."""
    general = SPEC_OF[op].numpy if floating and op in SPEC_OF else None
    real = REAL_UFUNC.get(general) if general is not None else None
    if real is None:
        general = None  # no such kernel: the test below never holds

    def method(self: Tensor) -> Any:
        backend = self._backend
        if not floating or backend.dtype_of(self._data).kind == "f":
            try:
                kernel = backend.kernels[op]
                if kernel is general:  # the stock NumPy kernel, on a real dtype
                    kernel = real
                out = kernel(self._data)
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


def fast_reduce(op: Op, slow: Callable, floating: bool = False) -> Callable:
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


# (method, maker, op, options): p10.Tensor's shortcuts of the mixin's methods
SHORTCUTS: tuple[tuple[str, Callable[..., Callable], Op, dict[str, bool]], ...] = (
    ("__add__", fast_binary, Op.ADD, {}),
    ("__radd__", fast_binary, Op.ADD, {"reflected": True}),
    ("__sub__", fast_binary, Op.SUB, {}),
    ("__rsub__", fast_binary, Op.SUB, {"reflected": True}),
    ("__mul__", fast_binary, Op.MUL, {}),
    ("__rmul__", fast_binary, Op.MUL, {"reflected": True}),
    ("__truediv__", fast_binary, Op.DIV, {"floating": True}),
    ("__rtruediv__", fast_binary, Op.DIV, {"floating": True, "reflected": True}),
    ("__iadd__", fast_inplace, Op.ADD, {}),
    ("__isub__", fast_inplace, Op.SUB, {}),
    ("__imul__", fast_inplace, Op.MUL, {}),
    ("__itruediv__", fast_inplace, Op.DIV, {}),
    ("add_", fast_inplace, Op.ADD, {}),
    ("sub_", fast_inplace, Op.SUB, {}),
    ("mul_", fast_inplace, Op.MUL, {}),
    ("div_", fast_inplace, Op.DIV, {}),
    ("__pow__", fast_binary, Op.POW, {}),
    ("__matmul__", fast_binary, Op.MATMUL, {}),
    ("matmul", fast_binary, Op.MATMUL, {}),
    ("__eq__", fast_binary, Op.EQ, {}),
    ("__ne__", fast_binary, Op.NE, {}),
    ("__lt__", fast_binary, Op.LT, {}),
    ("__le__", fast_binary, Op.LE, {}),
    ("__gt__", fast_binary, Op.GT, {}),
    ("__ge__", fast_binary, Op.GE, {}),
    ("__neg__", fast_unary, Op.NEG, {}),
    ("__abs__", fast_unary, Op.ABS, {}),
    ("mean", fast_reduce, Op.MEAN, {"floating": True}),
    ("max", fast_reduce, Op.MAX, {}),
    ("min", fast_reduce, Op.MIN, {}),
    ("sum", fast_reduce, Op.SUM, {}),  # a dtype= argument takes the slow path
)  # fmt: skip


def install() -> None:
    """Set the shortcuts of :data:`SHORTCUTS` on ``p10.Tensor`` (the mixin's methods exist)."""
    for name, make, op, options in SHORTCUTS:
        setattr(Tensor, name, make(op, getattr(TensorMethods, name), **options))
