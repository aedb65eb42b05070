"""Running a :class:`tpx.Function`: forward without recording, then one node for the whole call."""

from __future__ import annotations

import time
from typing import Any

from tpx import _mode
from tpx._errors import DefinitionError
from tpx._function import FunctionCtx
from tpx._graph import GradFn, Rule, RuleContext, user_frame
from tpx._mode import SAVED_CHECKS, state
from tpx._saved_checks import record_checksums
from tpx._tensor import Tensor, _edge, wrap

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
    start = time.perf_counter() if _mode.observers else 0.0
    with _mode.no_grad():
        out = cls.forward(ctx, *args, **kwargs)
    if not isinstance(out, Tensor):
        raise DefinitionError(
            f"{cls.__name__}.forward must return one tpx.Tensor, got {type(out).__name__}"
        )
    out = wrap(out._t)
    if not (any(needs) and state.grad_enabled and out.dtype.kind == "f"):
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
    out._rg = True
    out.grad_fn = node
    out._ver = out._t.version
    if _mode.observers:
        _mode.emit("on_node_recorded", node, out)
        _mode.emit("on_node_forward", node, args, out, time.perf_counter() - start)
    return out
