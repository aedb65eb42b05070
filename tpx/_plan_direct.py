"""NumPy calls written straight into a plan's replay code, for the NumPy backend's kernels that
only wrap one NumPy call.

``p10``'s NumPy backend calls NumPy through small wrappers (``x -= y`` runs
``lambda dst, b: np.subtract(dst, b, out=dst)``, ``sum`` runs ``np.add.reduce(x, axis,
keepdims=keepdims, out=...)``). Eager code needs them: one signature per op. A replay knows
each step's kernel and parameters when it is lowered, so it can write the NumPy call itself
with positional arguments (``subtract(b[0], v1, b[0])``, ``add_reduce(v3, p8, None, None,
p9)``): no wrapper frame, no keyword parsing per call, and the same NumPy call on the same
arrays, so the same bits. A kernel is recognised by identity (the backend's table entry
itself), so a backend whose kernel was replaced keeps the generic call.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from p10._ops import Op
from p10.backends import numpy_backend as nb
from tpx._plan import Slot, Step

# a direct form: (callee, the arguments after the step's own inputs) or None (keep the kernel)
Form = tuple[Any, tuple] | None
DST = object()  # in a form's arguments: the step's first input again (``out`` of an in-place call)

_INPLACE_UFUNCS = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.true_divide}
_REDUCE_UFUNCS = {
    Op.SUM: np.add,
    Op.PROD: np.multiply,
    Op.MAX: np.maximum,
    Op.MIN: np.minimum,
    Op.ALL: np.logical_and,
    Op.ANY: np.logical_or,
}


@cache
def _forms() -> dict[Callable[..., Any], Callable[[Step, list[Slot]], Form]]:
    """The NumPy backend's wrapper kernels -> the writer of their direct form."""
    forms: dict[Callable[..., Any], Callable[[Step, list[Slot]], Form]] = {}
    for op, ufunc in _INPLACE_UFUNCS.items():
        forms[nb.INPLACE[op]] = _inplace(ufunc)
    for op, ufunc in _REDUCE_UFUNCS.items():
        forms[nb.KERNELS[op]] = _reduce(ufunc)
    forms[nb.KERNELS[Op.PERMUTE]] = _permute
    forms[nb.KERNELS[Op.RELU]] = _relu
    return forms


def direct_form(
    kernel: Callable[..., Any], step: Step, slots: list[Slot], backend_of: dict[int, Any]
) -> Form:
    """The NumPy call that does what ``kernel`` does for ``step``, or None to call ``kernel``
    (also when an input is not a NumPy array: a backend that borrowed the kernel)."""
    writer = _forms().get(kernel)
    if writer is None:
        return None
    for x in step.inputs:
        if x.__class__ is int and getattr(backend_of.get(x), "array_type", None) is not np.ndarray:
            return None
    return writer(step, slots)


def _inplace(ufunc: np.ufunc) -> Callable[[Step, list[Slot]], Form]:
    def form(step: Step, slots: list[Slot]) -> Form:
        if step.inputs[0].__class__ is not int:
            return None
        return ufunc, (DST,)

    return form


def _reduce(ufunc: np.ufunc) -> Callable[[Step, list[Slot]], Form]:
    reduce = ufunc.reduce  # NOTE: one bound method, one global name in the code

    def form(step: Step, slots: list[Slot]) -> Form:
        if step.out is None or not slots[step.out].shape or set(step.params) - {"axis", "keepdims"}:
            return None  # NOTE: a 0-d result needs out=... (an array, not a NumPy scalar)
        params = step.params
        return reduce, (params.get("axis"), None, None, bool(params.get("keepdims")))

    return form


def _permute(step: Step, slots: list[Slot]) -> Form:
    x = step.inputs[0]
    if x.__class__ is not int or not slots[x].shape or set(step.params) != {"axes"}:
        return None  # NOTE: ndarray.transpose needs an ndarray: never a 0-d NumPy scalar
    return np.ndarray.transpose, (step.params["axes"],)


def _relu(step: Step, slots: list[Slot]) -> Form:
    x = step.inputs[0]
    if x.__class__ is not int or step.params:
        return None
    return np.maximum, (np.dtype(slots[x].dtype).type(0),)  # NOTE: as p10's _relu
