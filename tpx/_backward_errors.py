"""The backward engine's errors: each names the node, the op and what to do."""

from __future__ import annotations

from typing import Any

import numpy as np

import p10
from tpx._errors import AnomalyError, BackwardError, InplaceError, RuleError
from tpx._graph import GradFn
from tpx._tensor import Tensor


def given_grad(t: Tensor, g: Any) -> p10.Tensor:
    """The ``gradient=`` of backward as a tensor of ``t``'s dtype, or an error naming ``t``."""
    try:
        return p10.asarray(g, dtype=t.dtype)
    except (ValueError, TypeError, OverflowError) as exc:  # P10's errors are such builtins too
        given = repr(g) if len(repr(g)) <= 60 else f"{type(g).__name__} {repr(g)[:57]}..."
        raise BackwardError(
            f"backward: gradient={given} is not numeric data for {output_name(t)} of shape "
            f"{t.shape} and dtype {t.dtype.name} ({type(exc).__name__}: {exc}); pass a tensor "
            f"(or numbers) of that shape, e.g. tp.ones({t.shape}, dtype=tp.{t.dtype.name})"
        ) from None


def output_name(t: Tensor) -> str:
    return "a leaf tensor" if t.grad_fn is None else f"the output of {t.grad_fn.name}"


def raise_freed(node: GradFn) -> None:
    raise BackwardError(
        f"trying to backward through {node.name} (at {node.source}) a second time, but "
        "its saved values were freed after the first backward; pass retain_graph=True to "
        "the first backward() if you need to run it twice"
    )


def raise_modified(node: GradFn, saved: tuple) -> None:
    for i, (value, version) in enumerate(zip(saved, node.versions)):
        raw = value._value if value.__class__ is Tensor else value
        if raw is not None and raw.version != version:
            what = "its output" if i == len(saved) - 1 else f"input {i}"
            raise InplaceError(
                f"one of the values needed for gradient computation has been modified by "
                f"an inplace operation: {what} of {node.name} (shape {raw.shape}, "
                f"{raw.dtype.name}, recorded at {node.source}) is at version {raw.version}; "
                f"expected version {version}. Clone it before modifying it in place"
            )


def raise_arity(node: GradFn, grads: Any) -> None:
    n = len(grads) if isinstance(grads, tuple) else type(grads).__name__
    raise RuleError(
        f"the rule of {node.op.value} ({node.name}) returned {n} gradients for "
        f"{len(node.edges)} inputs; a rule returns a tuple with one gradient (or None) per input"
    )


def raise_bad_gradient(node: GradFn, grads: tuple) -> None:
    for i, (g, edge, (shape, dtype)) in enumerate(zip(grads, node.edges, node.in_meta)):
        if edge is not None and g is not None and (g.shape != shape or g.dtype != dtype):
            raise RuleError(
                f"the rule of {node.op.value} ({node.name}) returned a gradient of shape "
                f"{g.shape} {g.dtype.name} for input {i} of shape {tuple(shape)} {dtype.name}; "
                "gradients must match their input (un-broadcast with tpx.rules.unbroadcast)"
            )


def check_grad(node: GradFn, g: Any, what: str) -> None:
    arr = np.asarray(g)
    if not np.isfinite(arr).all():
        kind = "NaN" if np.isnan(arr).any() else "Inf"
        raise AnomalyError(
            f"anomaly in backward of {node.op.value} ({node.name}): the {what} contains {kind}; "
            f"the forward op was recorded at {node.source} in scope {node.scope or '<root>'}"
        )
