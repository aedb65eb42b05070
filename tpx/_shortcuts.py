"""Shortcuts of ``tpx.Tensor``'s hottest operators (``x * w``, ``y.sum()``, ``p -= lr * g``).

Each takes a TPX tensor or a Python int/float. When nothing is recorded it runs P10's own
operator on the P10 values; when a node is recorded it runs the forward and records the node
through :func:`tpx._recording.record`, the recording path of the general path as well.
Anything else (and anomaly mode) takes the method of P10's mixin, which dispatches to
:func:`tpx._recording.apply_op`. ``install`` sets them on ``tpx.Tensor``.

Anomaly mode is read as ``_mode.anomalous and state.anomaly``: the thread-local ``state`` costs
~1,000 instructions a read (2% of a recorded op), so it is read only while some thread has an
anomaly check on (see ``tpx._mode.anomalous``).
"""

from __future__ import annotations

import time
from typing import Any

import p10
from p10 import Op
from p10._elementwise import scalar_tensor
from p10._methods import TensorMethods
from p10._tensor import _fast_axes
from tpx import _mode, _observers
from tpx._mode import state
from tpx._recording import record
from tpx._tensor import Tensor, wrap
from tpx._torch import dim_kwargs

P = p10.Tensor
M = TensorMethods
_new = object.__new__


def _named(method: Any, slow: Any) -> Any:
    """``method`` (a shortcut) under the name and docstring of ``slow``, the method it speeds up."""
    method.__name__ = slow.__name__
    method.__qualname__ = f"Tensor.{slow.__name__}"
    method.__doc__ = slow.__doc__
    return method


def _fast_binary(op: Op, forward: Any, slow: Any, reflected: Any = None) -> Any:
    """``slow`` (P10's function, which dispatches to :func:`apply_op`) with a shortcut.

    The shortcut takes a TPX tensor or a Python int/float as the other operand. When nothing
    is recorded it runs P10's own operator on the P10 values (``forward``, or ``reflected``
    for ``2 * x``), which is what the general path computes. When a node is recorded and both
    operands share dtype and backend, it runs ``forward`` and records the node directly, the
    same node as the general path's (and emits its observer events). Anything else, and anomaly
    mode, take ``slow``.
    """

    def method(self: Tensor, other: Any) -> Any:
        cls = other.__class__
        if cls is Tensor:
            b = other._value
            needs = self._requires_grad or other._requires_grad
        elif cls is float or cls is int:
            b = other
            needs = self._requires_grad
        else:
            return slow(self, other)
        if needs and state.grad_enabled:
            if _mode.anomalous and state.anomaly:
                return slow(self, other)
            start = time.perf_counter() if _observers.observers else 0.0
            a = self._value
            if cls is not Tensor:
                b = other = scalar_tensor(b, a)  # the input the general path records
            if a._backend is not b._backend or (
                a._data.dtype is not b._data.dtype and a.dtype != b.dtype  # identity: cheap
            ):
                return slow(self, other)
            if reflected is not None:  # `2 - x`: the scalar is the left operand
                return record(op, (other, self), (b, a), {}, forward(b, a), start)
            return record(op, (self, other), (a, b), {}, forward(a, b), start)
        if _mode.anomalous and state.anomaly:
            return slow(self, other)
        out = reflected(self._value, b) if reflected is not None else forward(self._value, b)
        # NOTE: wrap() inlined: one call less per op in a forward that records nothing
        t = _new(Tensor)
        t._value, t._requires_grad, t._recorded_version = out, False, 0
        t._grad = t.grad_fn = t._accumulator_ref = t._rare_attrs = None
        return t

    return _named(method, slow)


def _fast_unary(op: Op, forward: Any, slow: Any) -> Any:
    """``slow`` with a shortcut, as :func:`_fast_binary`."""

    def method(self: Tensor) -> Any:
        if _mode.anomalous and state.anomaly:
            return slow(self)
        a = self._value
        if self._requires_grad and state.grad_enabled:
            start = time.perf_counter() if _observers.observers else 0.0
            return record(op, (self,), (a,), {}, forward(a), start)
        t = _new(Tensor)  # wrap() inlined, as in _fast_binary
        t._value, t._requires_grad, t._recorded_version = forward(a), False, 0
        t._grad = t.grad_fn = t._accumulator_ref = t._rare_attrs = None
        return t

    return _named(method, slow)


def _fast_reduce(op: Op, forward: Any, slow: Any) -> Any:
    """``slow`` with a shortcut for ``axis`` None or one int, as P10's own shortcut: the node
    records the params that the general path records (``axis`` as a sorted tuple or None)."""

    def method(self: Tensor, axis: Any = None, keepdims: bool = False, *args, **kwargs) -> Any:
        if kwargs:  # PyTorch's dim=/keepdim= (see tpx._torch)
            axis, keepdims, kwargs = dim_kwargs(slow.__name__, axis, keepdims, kwargs)
        if (
            self._requires_grad
            and state.grad_enabled
            and not (args or kwargs)
            and keepdims.__class__ is bool
            and not (_mode.anomalous and state.anomaly)
        ):
            a = self._value
            axes = None if axis is None else _fast_axes(axis, len(a._data.shape))
            if axes is not False:
                start = time.perf_counter() if _observers.observers else 0.0
                out = forward(a, axis, keepdims)
                params = {"axis": axes, "keepdims": keepdims}
                return record(op, (self,), (a,), params, out, start)
        elif not (self._requires_grad and state.grad_enabled) and not (
            _mode.anomalous and state.anomaly
        ):
            return wrap(forward(self._value, axis, keepdims, *args, **kwargs))  # records nothing
        return slow(self, axis, keepdims, *args, **kwargs)

    return _named(method, slow)


def _fast_inplace(op: Op, slow: Any) -> Any:
    """``slow`` (out of place, then written back, recorded when needed) with a shortcut: when
    nothing is recorded (the optimizer's ``p -= lr * g`` under ``no_grad``), P10 writes in
    place with the backend's in-place kernel."""

    def method(self: Tensor, other: Any) -> Any:
        cls = other.__class__
        if cls is Tensor:
            needs = self._requires_grad or other._requires_grad
            b = other._value
        elif cls is float or cls is int:
            needs = self._requires_grad
            b = other
        else:
            return slow(self, other)
        # NOTE: observers do not send this to the slow path: a write that is not recorded
        # sends them no event (the optimizer's updates under an inspector's capture)
        if (needs and state.grad_enabled) or (_mode.anomalous and state.anomaly):
            return slow(self, other)
        if self._value._inplace(op, b):
            self._recorded_version = self._value.version
            return self
        return slow(self, other)

    return _named(method, slow)


_OPERATORS = {
    "__add__": _fast_binary(Op.ADD, P.__add__, M.__add__),
    "__radd__": _fast_binary(Op.ADD, P.__add__, M.__radd__, P.__radd__),
    "__sub__": _fast_binary(Op.SUB, P.__sub__, M.__sub__),
    "__rsub__": _fast_binary(Op.SUB, P.__sub__, M.__rsub__, P.__rsub__),
    "__mul__": _fast_binary(Op.MUL, P.__mul__, M.__mul__),
    "__rmul__": _fast_binary(Op.MUL, P.__mul__, M.__rmul__, P.__rmul__),
    "__truediv__": _fast_binary(Op.DIV, P.__truediv__, M.__truediv__),
    "__rtruediv__": _fast_binary(Op.DIV, P.__truediv__, M.__rtruediv__, P.__rtruediv__),
    "__iadd__": _fast_inplace(Op.ADD, M.__iadd__),
    "__isub__": _fast_inplace(Op.SUB, M.__isub__),
    "__imul__": _fast_inplace(Op.MUL, M.__imul__),
    "__itruediv__": _fast_inplace(Op.DIV, M.__itruediv__),
    "add_": _fast_inplace(Op.ADD, M.add_),
    "sub_": _fast_inplace(Op.SUB, M.sub_),
    "mul_": _fast_inplace(Op.MUL, M.mul_),
    "div_": _fast_inplace(Op.DIV, M.div_),
    "__matmul__": _fast_binary(Op.MATMUL, P.__matmul__, M.__matmul__),
    "matmul": _fast_binary(Op.MATMUL, P.matmul, M.matmul),
    "__neg__": _fast_unary(Op.NEG, P.__neg__, M.__neg__),
    "sum": _fast_reduce(Op.SUM, P.sum, M.sum),  # a dtype= argument takes the slow path
    "mean": _fast_reduce(Op.MEAN, P.mean, M.mean),
}


def install() -> None:
    """Set the operator shortcuts on ``tpx.Tensor``."""
    for name, method in _OPERATORS.items():
        setattr(Tensor, name, method)


install()
