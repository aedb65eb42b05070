"""Custom gradients from user code: ``tpx.Function`` classes and ``register_rule`` for new ops."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import p10
from p10 import Handle
from tpx._errors import DefinitionError
from tpx._graph import Rule
from tpx.rules import RULES


def register_rule(
    op: Any, vjp: Callable[..., tuple], *, save: tuple[int, ...] = (), save_output: bool = False
) -> Handle:
    """Register the gradient rule of an op (typically one made with ``p10.define_op``).

    ``vjp(ctx, g)`` returns one gradient (or None) per input, computed with P10 functions;
    ``save`` lists the inputs it reads from ``ctx.inputs``. Returns a removable handle.

    >>> import numpy as np, p10, tpx as tp
    >>> cube = p10.define_op("cube_doc", lambda x: x**3)
    >>> h = tp.register_rule(cube, lambda ctx, g: (g * 3 * ctx.inputs[0] ** 2,), save=(0,))
    >>> x = tp.asarray([2.0], requires_grad=True)
    >>> p10.apply(cube, x).sum().backward(); x.grad.tolist()
    [12.0]
    >>> h.remove()
    """
    if not callable(vjp):
        raise DefinitionError(f"register_rule({op.value}): vjp must be callable, got {vjp!r}")
    try:
        inspect.signature(vjp).bind(None, None)
    except TypeError as e:
        raise DefinitionError(
            f"register_rule({op.value}): vjp must take (ctx, grad_output): {e}"
        ) from None
    arity = getattr(op, "arity", None)
    if arity is not None and any(i >= arity for i in save):
        raise DefinitionError(f"register_rule({op.value}): save={save} names inputs past {arity}")
    previous = RULES.get(op)
    RULES[op] = Rule(vjp, tuple(save), save_output)

    def undo() -> None:
        if previous is None:
            RULES.pop(op, None)
        else:
            RULES[op] = previous

    return Handle(undo)


class FunctionCtx:
    """The ``ctx`` of a :class:`Function`: save tensors, read ``needs_input_grad``, keep attrs."""

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.saved_tensors: tuple[Any, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep ``tensors`` for ``backward`` (read them back as ``ctx.saved_tensors``)."""
        self.saved_tensors = tensors


class Function:
    """A custom differentiable operation, as PyTorch's ``torch.autograd.Function``.

    >>> import tpx as tp
    >>> class Square(tp.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return g * 2 * x
    >>> x = tp.asarray([3.0], requires_grad=True)
    >>> Square.apply(x).sum().backward(); x.grad.tolist()
    [6.0]
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("forward", "backward"):
            if getattr(cls, name) is getattr(Function, name):
                raise DefinitionError(f"{cls.__name__} must define a static method {name}()")
        try:
            inspect.signature(cls.backward).bind(None, None)
        except TypeError as e:
            raise DefinitionError(
                f"{cls.__name__}.backward must take (ctx, grad_output): {e}"
            ) from None
        params = inspect.signature(cls.forward).parameters
        if not params:
            raise DefinitionError(f"{cls.__name__}.forward must take ctx as its first argument")
        cls._op = p10.CustomOp(cls.__name__, None)

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """Compute the output from the inputs (runs with grad mode off)."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx: FunctionCtx, grad_output: Any) -> Any:
        """Return one gradient (or None) per tensor input of ``forward``."""
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and record a node whose rule calls ``backward``."""
        from tpx._function_apply import apply_function

        return apply_function(cls, args, kwargs)
