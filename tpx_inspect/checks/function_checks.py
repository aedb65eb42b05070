"""The checks that run a function rather than read one recorded graph: ``gradcheck`` (the
whole function against finite differences) and ``tracing`` (grad mode on vs off); each
registers itself with :func:`~tpx_inspect.checks.registry.register_check`.

>>> import tpx as tp
>>> x = tp.asarray([0.5, 1.5], requires_grad=True)
>>> gradcheck_result(lambda t: (t * t).sum(), [x], seed=0, where="here").passed
True
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import p10
import tpx
from tpx_inspect.checks.gradcheck import gradcheck
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.report import CheckResult, Finding, Skip
from tpx_inspect.checks.tracing import tracing_check

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


@register_check(
    "gradcheck",
    subject="function",
    rank=0,
    summary=(
        "the whole function against central finite differences in float64 (fast mode: random "
        "projections, seeded), p10's generator reseeded before every call; names the output and "
        "input that disagree. A function that differs between two calls is SKIPPED."
    ),
)
def gradcheck_result(
    fn: Callable[..., Any], inputs: Sequence[Any], *, seed: int, where: str
) -> CheckResult:
    """Whole-function gradcheck of ``fn(*inputs)`` (float64 copies, fast mode); findings are
    located at ``where``."""
    start = time.perf_counter()
    args = [_float64(x) for x in inputs]
    seeded = _reseeded(fn, seed)
    if not repeatable(seeded, args):
        return CheckResult("gradcheck", 0, (), 0, time.perf_counter() - start,
                           skips=(Skip(NOT_REPEATABLE),))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = gradcheck(seeded, args, fast_mode=True, seed=seed, raise_exception=False)
    findings = tuple(
        Finding(
            "gradcheck", m.message(), source=where, details={"output": m.output, "input": m.input}
        )
        for m in result.mismatches
    )
    note = ("inputs upcast to float64; fast mode (random projections)",)
    return CheckResult("gradcheck", result.checked, findings, 0, time.perf_counter() - start, note)


NOT_REPEATABLE = (
    "the function gives different values on two calls with the same inputs and p10's default "
    "generator reseeded (a random op with its own generator?): nothing to compare"
)


def _reseeded(fn: Callable[..., Any], seed: int) -> Callable[..., Any]:
    """``fn`` with p10's default generator reseeded before every call, so that random ops
    (dropout) draw the same values at every finite-difference step."""

    def call(*args: Any) -> Any:
        p10.manual_seed(seed)
        return fn(*args)

    return call


def repeatable(fn: Callable[..., Any], args: Sequence[Any]) -> bool:
    """Whether two calls of ``fn(*args)`` (grad mode off) give bitwise equal outputs.

    >>> import tpx as tp
    >>> repeatable(lambda t: t * 2, [tp.ones(2)])
    True
    """
    with tpx.no_grad():
        first, second = _values(fn(*args)), _values(fn(*args))
    return len(first) == len(second) and all(
        a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
        for a, b in zip(first, second)
    )


def _values(out: Any) -> list[np.ndarray]:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.array(o.numpy()) for o in outs if isinstance(o, tpx.Tensor)]


def _float64(x: Any) -> Any:
    if isinstance(x, tpx.Tensor) and x.requires_grad and x.dtype.kind == "f":
        return tpx.asarray(np.asarray(x.numpy(), np.float64), requires_grad=True)
    return x


@register_check(
    "tracing",
    subject="function",
    rank=60,
    summary=(
        "the function runs with grad mode on and off (p10's generator reseeded before each); its "
        "outputs must be equal bitwise, and every node recorded with grad mode on must find, in "
        "order, a kernel call of its op with grad mode off that gave the same value bitwise. "
        "Recorded ops and values are compared, not kernel call counts: an in-place `g += ...` "
        "passes. The first difference is attributed to its recorded node. A function that differs "
        "between two untraced calls (a random op with its own generator) is SKIPPED."
    ),
)
def tracing_result(
    fn: Callable[..., Any], inputs: Sequence[Any], *, seed: int, where: str
) -> CheckResult:
    """The tracing check on ``fn(*inputs)``, findings inside tpx_inspect located at ``where``."""
    traced = tracing_check(fn, [fresh(x) for x in inputs], seed)[0]
    return _relocated(traced, where)


def _relocated(result: CheckResult, where: str) -> CheckResult:
    """``result`` with finding sources inside tpx_inspect replaced by ``where``."""
    findings = tuple(
        dataclasses.replace(f, source=where) if f.source.startswith(_HERE) else f
        for f in result.findings
    )
    return dataclasses.replace(result, findings=findings)


def fresh(x: Any) -> Any:
    """A new leaf sharing ``x``'s value, so the checks never touch the caller's ``.grad``."""
    if isinstance(x, tpx.Tensor) and x.requires_grad:
        return x.detach().requires_grad_(True)
    return x
