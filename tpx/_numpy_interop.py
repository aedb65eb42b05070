"""NumPy meets ``tpx.Tensor`` without dropping the graph silently.

``ndarray + t``, ``np.float64(2) * t`` and ``np.exp(t)`` reach NumPy's ufunc protocol; the
ufuncs TPX has ops for run as TPX ops (a tensor comes back, recorded). ``np.sum(t)`` and the
other reductions reach ``__array_function__`` and run as TPX reductions, as NumPy calls a
PyTorch tensor's own ``sum``. Anything else converts the tensors to arrays, as before; when one
of them requires grad in grad mode and the result holds floating values, a ``TypeError`` names
the function and the fix instead of returning an array without a graph (a bool from
``np.allclose`` or indices from ``np.argsort`` pass).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import p10
from tpx import _torch
from tpx._mode import state

_UFUNCS: dict[Any, Callable[..., Any]] = {
    np.add: p10.add, np.subtract: p10.subtract, np.multiply: p10.multiply,
    np.true_divide: p10.divide, np.floor_divide: p10.floor_divide, np.remainder: p10.remainder,
    np.power: p10.pow, np.negative: p10.negative, np.positive: p10.positive,
    np.absolute: p10.abs, np.exp: p10.exp, np.log: p10.log, np.log1p: p10.log1p,
    np.expm1: p10.expm1, np.sqrt: p10.sqrt, np.square: p10.square, np.sin: p10.sin,
    np.cos: p10.cos, np.tan: p10.tan, np.tanh: p10.tanh, np.sign: p10.sign,
    np.floor: p10.floor, np.ceil: p10.ceil, np.maximum: p10.maximum, np.minimum: p10.minimum,
    np.equal: p10.equal, np.not_equal: p10.not_equal, np.less: p10.less,
    np.less_equal: p10.less_equal, np.greater: p10.greater, np.greater_equal: p10.greater_equal,
    np.logical_and: p10.logical_and, np.logical_or: p10.logical_or,
    np.logical_xor: p10.logical_xor, np.logical_not: p10.logical_not, np.isnan: p10.isnan,
    np.isinf: p10.isinf, np.isfinite: p10.isfinite, np.matmul: p10.matmul,
}  # fmt: skip


class _Fallback(Exception):
    """A mapped NumPy function got an argument TPX does not take (``out=``, ``where=``)."""


def _reduction(fn: Callable[..., Any], *names: str) -> Callable[..., Any]:
    """NumPy's ``np.sum(a, axis, dtype, out, keepdims)`` (and friends) as a TPX reduction."""

    def run(a: Any, axis: Any = None, *args: Any, **kwargs: Any) -> Any:
        extra = dict(zip(names, args))
        extra.update(kwargs)
        keepdims = extra.pop("keepdims", False)
        if extra.pop("out", None) is not None or extra.pop("dtype", None) is not None:
            raise _Fallback
        ddof = extra.pop("ddof", None)
        if extra:
            raise _Fallback
        if ddof is not None:
            return fn(a, axis=axis, keepdims=keepdims, correction=ddof)
        return fn(a, axis=axis, keepdims=keepdims)

    return run


def _stats(fn: Callable[..., Any]) -> Callable[..., Any]:
    # NOTE: NumPy's var/std default to ddof=0, the Array API's correction=0: axis= gives it
    return lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw: _reduction(fn)(
        a, axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, **kw
    )


_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.sum: _reduction(_torch.sum, "dtype", "out", "keepdims"),
    np.mean: _reduction(_torch.mean, "dtype", "out", "keepdims"),
    np.prod: _reduction(_torch.prod, "dtype", "out", "keepdims"),
    np.max: _reduction(_torch.max, "out", "keepdims"),
    np.min: _reduction(_torch.min, "out", "keepdims"),
    np.amax: _reduction(_torch.max, "out", "keepdims"),
    np.amin: _reduction(_torch.min, "out", "keepdims"),
    np.argmax: _reduction(_torch.argmax, "out"),
    np.argmin: _reduction(_torch.argmin, "out"),
    np.var: _stats(_torch.var),
    np.std: _stats(_torch.std),
}


def _tensors(values: Any) -> list[Any]:
    """Every ``tpx.Tensor`` in ``values``, looking one level into lists and tuples."""
    found = []
    for v in values:
        if isinstance(v, NumpyInterop):  # NOTE: tpx.Tensor is the class with this mixin
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found += [w for w in v if isinstance(w, NumpyInterop)]
    return found


def _to_numpy(value: Any) -> Any:
    if isinstance(value, NumpyInterop):
        return np.asarray(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_numpy(v) for v in value)
    return value


def _floating(result: Any) -> bool:
    """Whether ``result`` holds floating values (that a gradient could have flowed through)."""
    if isinstance(result, (tuple, list)):
        return any(_floating(r) for r in result)
    return (
        isinstance(result, (np.ndarray, np.generic, float))
        and np.asarray(result).dtype.kind in "fc"
    )


def _refuse_graph(what: str, values: Any, result: Any) -> None:
    """Raise when a floating result was computed from tensors that require grad (a bool from
    ``np.allclose`` or indices from ``np.argsort`` carry no gradient, and pass)."""
    grads = state.grad_enabled and any(t.requires_grad for t in _tensors(values))
    if grads and _floating(result):
        raise TypeError(
            f"{what} on a tpx.Tensor that requires grad would return a NumPy array and drop "
            "the graph; use the tpx function or operator instead, or .detach() the tensor "
            "first if no gradient should flow"
        )


class NumpyInterop:
    """NumPy's ufunc and array-function protocols for ``tpx.Tensor`` (a mixin)."""

    __slots__ = ()
    __array_priority__ = 1000  # NOTE: ndarray's operators defer to the tensor's, as PyTorch

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        fn = _UFUNCS.get(ufunc)
        if fn is not None and method == "__call__" and not kwargs:
            return fn(*inputs)
        args = _to_numpy(inputs)
        arrays = {k: _to_numpy(v) for k, v in kwargs.items()}
        result = getattr(ufunc, method)(*args, **arrays)
        _refuse_graph(f"numpy.{ufunc.__name__}", inputs + tuple(kwargs.values()), result)
        return result

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        fn = _FUNCTIONS.get(func)
        if fn is not None:
            try:
                return fn(*args, **kwargs)
            except _Fallback:
                pass
        result = func(*_to_numpy(args), **{k: _to_numpy(v) for k, v in kwargs.items()})
        _refuse_graph(f"numpy.{func.__name__}", args + tuple(kwargs.values()), result)
        return result
