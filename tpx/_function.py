"""Custom gradients from user code: ``tpx.Function`` classes and ``register_rule`` for new ops.

Running a Function is its ``forward`` without recording, then one node for the whole call,
whose rule calls its ``backward``.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

import p10
from p10 import Handle
from tpx import _mode, _observers
from tpx._complex_rules import complex_rule
from tpx._errors import DefinitionError
from tpx._graph import GradFn, Rule, RuleContext, user_frame
from tpx._mode import SAVED_CHECKS, state
from tpx._recording import _edge
from tpx._saved_checks import record_checksums
from tpx._tensor import Tensor, wrap
from tpx.rules import RULES

COMPLEX_MODES = ("real", "holomorphic", "own")


def register_rule(
    op: Any,
    vjp: Callable[..., tuple],
    *,
    save: tuple[int, ...] = (),
    save_output: bool = False,
    complex_mode: str = "real",
) -> Handle:
    """Register the gradient rule of an op (typically one made with ``p10.define_op``).

    ``vjp(ctx, g)`` returns one gradient (or None) per input, computed with P10 functions;
    ``save`` lists the inputs it reads from ``ctx.inputs``. Returns a removable handle.

    Complex numbers follow PyTorch's convention: the gradient of a real loss ``L`` with respect
    to ``z = x + iy`` is ``dL/dx + i dL/dy`` (the conjugate Wirtinger derivative, times two).
    ``complex_mode`` says how the rule meets it:

    - ``"real"`` (default): the rule is for real tensors; a complex gradient or input reaching
      it raises :class:`~tpx.RuleError` (never a silently wrong gradient);
    - ``"holomorphic"``: ``vjp`` is written as for real numbers (``g * f'(x)``) and the op is
      complex-analytic; TPX runs it on ``conj(g)`` and conjugates the result, as it does for
      its own holomorphic rules (``exp``, ``matmul``...), which gives ``g * conj(f'(z))``;
    - ``"own"``: ``vjp`` receives and returns gradients in the convention itself, as the
      ``backward`` of PyTorch's ``torch.autograd.Function`` (and of :class:`tpx.Function`)
      does; needed for ops that are not complex-analytic (``abs``, ``conj``, ``real``...).

    >>> import numpy as np, p10, tpx as tp
    >>> cube = p10.define_op("cube_doc", lambda x: x**3)
    >>> h = tp.register_rule(cube, lambda ctx, g: (g * 3 * ctx.inputs[0] ** 2,), save=(0,))
    >>> x = tp.asarray([2.0], requires_grad=True)
    >>> p10.apply(cube, x).sum().backward(); x.grad.tolist()
    [12.0]
    >>> h.remove()
    >>> h = tp.register_rule(cube, lambda ctx, g: (g * 3 * ctx.inputs[0] ** 2,), save=(0,),
    ...                      complex_mode="holomorphic")
    >>> z = tp.asarray([1j], requires_grad=True)
    >>> p10.real(p10.apply(cube, z)).sum().backward(); z.grad.tolist()  # conj(3 z**2)
    [(-3-0j)]
    >>> h.remove()
    """
    if complex_mode not in COMPLEX_MODES:
        raise DefinitionError(
            f"register_rule({op.value}): complex_mode must be one of {COMPLEX_MODES}, "
            f"got {complex_mode!r}"
        )
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
    RULES[op] = Rule(complex_rule(op, vjp, complex_mode), tuple(save), save_output)

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

    With complex tensors ``backward`` follows PyTorch's convention itself (as
    ``register_rule(..., complex_mode="own")``): it receives ``dL/dRe + i dL/dIm`` of the
    output and returns the same of each input (``g * conj(f'(z))`` for an analytic ``f``).

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
        return apply_function(cls, args, kwargs)


_rules: dict[type, Rule] = {}


def _rule_for(cls: type) -> Rule:
    rule = _rules.get(cls)
    if rule is None:

        def vjp(ctx: RuleContext, g: Any) -> tuple:
            fctx = ctx.function_ctx
            # NOTE: the saved tensors live on the node (version-checked, freed after backward)
            fctx.saved_tensors = tuple(_as_tensor(s) for s in ctx.inputs)
            try:
                out = cls.backward(fctx, _as_tensor(g))
            finally:
                fctx.saved_tensors = ()
            return out if isinstance(out, tuple) else (out,)

        rule = _rules[cls] = Rule(vjp)
    return rule


def _as_tensor(x: Any) -> Any:
    return x if x is None or x.__class__ is Tensor else wrap(x)


def apply_function(cls: type, args: tuple, kwargs: dict) -> Any:
    """Run ``cls.forward`` with grad mode off and record one node whose rule is ``backward``."""
    needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    ctx = FunctionCtx(needs)
    start = time.perf_counter() if _observers.observers else 0.0
    with _mode.no_grad():
        out = cls.forward(ctx, *args, **kwargs)
    if not isinstance(out, Tensor):
        raise DefinitionError(
            f"{cls.__name__}.forward must return one tpx.Tensor, got {type(out).__name__}"
        )
    out = wrap(out._value)
    if not (any(needs) and state.grad_enabled and out.dtype.kind in "fc"):
        return out
    edges = tuple(_edge(a) for a in args)
    meta = tuple((a.shape, a.dtype) if isinstance(a, Tensor) else ((), None) for a in args)
    node = GradFn(cls._op, {}, _rule_for(cls), edges, meta)
    node.ctx = ctx
    saved = tuple(ctx.saved_tensors)
    ctx.saved_tensors = ()
    if saved:
        node.saved = (*saved, None)
        node.versions = (*(getattr(s, "version", 0) for s in saved), 0)
        if state.anomaly & SAVED_CHECKS:
            record_checksums(node)
    node.scope = state.scope
    node.code, node.lineno = user_frame()
    node.out_meta = (out.shape, out.dtype)
    out._requires_grad = True
    out.grad_fn = node
    out._recorded_version = out._value.version
    if _observers.observers:
        _observers.emit("on_node_recorded", node, out)
        _observers.emit("on_node_forward", node, args, out, time.perf_counter() - start)
    return out
