"""Replay one recorded node: rerun its forward and its rule on chosen values.

A :class:`Replay` is the small interface every per-node check uses; it works the same on a
node recorded live and on one loaded from a saved trace, because it reads only a
:class:`~tpx_inspect.check_view.NodeRecord`. Built-in ops run with ``p10.execute`` on the
node's op and params and their rule from ``tpx.rules.RULES`` (or the live rule); nodes of a
``tp.Function`` rerun its ``forward`` and ``backward``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import p10
import tpx
from tpx import FunctionCtx, RuleContext
from tpx_inspect.check_view import NodeRecord


def rule_context(node: NodeRecord, params: dict, inputs: tuple, output: Any) -> RuleContext:
    """The context a rule of ``node`` reads, built from the trace and the values to replay."""
    meta = tuple((t.shape, t.dtype) if isinstance(t, p10.Tensor) else ((), None) for t in inputs)
    needs = tuple(e is not None for e in node.edges)
    return RuleContext(params, meta, needs, inputs, output)


def why_not_replayable(node: NodeRecord) -> str | None:
    """The reason ``node`` cannot be replayed, or None when it can.

    >>> why_not_replayable(NodeRecord(0, "AccumulateGrad", None, {}, (), (), None))
    'a leaf has no forward'
    """
    if node.is_leaf:
        return "a leaf has no forward"
    if node.unavailable is not None:
        return node.unavailable
    if node.inputs is None or node.output is None:
        return "its input/output values were not recorded"
    custom = isinstance(node.op, p10.CustomOp) and node.function is None
    if custom and node.op not in p10.get_backend("numpy").kernels:
        return f"custom op {node.op.value!r} has no numpy kernel or Function class here"
    if node.function is None and node.rule is None and node.op not in tpx.rules.RULES:
        return f"no gradient rule for {node.op.value} is registered here"
    return None


class Replay:
    """Forward and VJP of one node on the numpy spec backend (or ``backend``), optionally
    upcast to float64.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     _ = tp.asarray([0.5], requires_grad=True).sin()
    >>> r = Replay(rec.graph().replay_nodes[-1])
    >>> xs = r.inputs()
    >>> round(float(r.vjp(xs, r.forward(xs), np.ones(1))[0][0]), 6)  # cos(0.5)
    0.877583
    """

    def __init__(self, node: NodeRecord, upcast: bool = True, backend: str = "numpy") -> None:
        self.node = node
        self.upcast = upcast
        self.backend = backend
        self.params = _params(node.params, upcast)
        self.rule = node.rule if node.rule is not None else tpx.rules.RULES.get(node.op)

    def inputs(self) -> list[Any]:
        """The node's recorded inputs, as NumPy arrays (float64 when upcasting)."""
        return [self._array(x) for x in self.node.inputs or ()]

    def differentiable(self) -> list[int]:
        """Positions of the inputs that need a gradient (an edge and a floating value)."""
        xs = self.node.inputs or ()
        return [
            i
            for i, e in enumerate(self.node.edges)
            if e is not None and isinstance(xs[i], np.ndarray) and xs[i].dtype.kind == "f"
        ]

    def _array(self, x: Any) -> Any:
        if isinstance(x, np.ndarray) and self.upcast and x.dtype.kind == "f":
            return x.astype(np.float64)
        return x

    def forward(self, xs: Sequence[Any]) -> np.ndarray:
        """The node's output recomputed from ``xs`` (NumPy arrays) on the numpy backend."""
        if self.node.function is not None:
            out, _ = self._function_forward(xs)
            return np.array(out.numpy())
        ts = [self._tensor(x) for x in xs]
        return np.array(p10.execute(self.node.op, ts, self.params).numpy())

    def vjp(self, xs: Sequence[Any], out: np.ndarray, g: np.ndarray) -> tuple[Any, ...]:
        """The node's rule applied to cotangent ``g`` at ``xs``: one array (or None) per input."""
        if self.node.function is not None:
            return self._function_vjp(xs, g)
        ts = tuple(self._tensor(x) for x in xs)
        ctx = rule_context(self.node, self.params, ts, self._tensor(out))
        grads = self.rule.vjp(ctx, self._tensor(np.asarray(g, dtype=out.dtype)))
        return tuple(_numpy(gi) for gi in grads)

    def _tensor(self, x: Any) -> Any:
        t = _tensor(x)
        if self.backend != "numpy" and isinstance(t, p10.Tensor):
            return t.to(backend=self.backend)
        return t

    def _function_forward(self, xs: Sequence[Any]) -> tuple[Any, FunctionCtx]:
        ctx = FunctionCtx(tuple(e is not None for e in self.node.edges))
        args = [tpx.asarray(self._tensor(x)) if isinstance(x, np.ndarray) else x for x in xs]
        with tpx.no_grad():
            out = self.node.function.forward(ctx, *args)
        return out, ctx

    def _function_vjp(self, xs: Sequence[Any], g: np.ndarray) -> tuple[Any, ...]:
        out, ctx = self._function_forward(xs)
        with tpx.no_grad():
            grad_output = tpx.asarray(self._tensor(np.asarray(g, out.dtype)))
            grads = self.node.function.backward(ctx, grad_output)
        grads = grads if isinstance(grads, tuple) else (grads,)
        return tuple(_numpy(gi) for gi in grads)


def _params(params: Any, upcast: bool) -> dict[str, Any]:
    out = dict(params)
    dtype = out.get("dtype")
    if upcast and dtype is not None and np.dtype(dtype).kind == "f":
        # NOTE: a cast to float32 would throw away the float64 precision finite differences need.
        out["dtype"] = np.dtype(np.float64)
    return out


def _tensor(x: Any) -> Any:
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray):
        # NOTE: shares memory; kernels and rules never write into their inputs.
        return p10.from_numpy(x)
    return x


def _numpy(g: Any) -> Any:
    if g is None:
        return None
    if isinstance(g, tpx.Tensor):
        g = g.p10
    return np.array(g.numpy()) if isinstance(g, p10.Tensor) else np.asarray(g)
