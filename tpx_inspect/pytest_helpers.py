"""Assertions for users' own test suites: gradients of a function, or every check at once.

They raise ``AssertionError`` with the checks' messages, so they work under pytest (which
shows the message) and anywhere else.

>>> import tpx as tp
>>> x = tp.asarray([0.2, 0.9], dtype=tp.float64, requires_grad=True)
>>> assert_gradients(lambda t: (t.tanh() * t).sum(), [x], second_order=True)
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from typing import Any

from tpx_inspect.checks.gradcheck import gradcheck, gradgradcheck
from tpx_inspect.checks.runner import FUNCTION_CHECKS, run_all_checks

__all__ = ["assert_checks_pass", "assert_gradients"]


def assert_gradients(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    fast_mode: bool = False,
    seed: int = 0,
    second_order: bool = False,
) -> None:
    """Assert that ``fn``'s gradients (and, with ``second_order``, its second derivatives)
    agree with central differences; the error names output, input, element and values.

    >>> import tpx as tp
    >>> x = tp.asarray([1.0], dtype=tp.float64, requires_grad=True)
    >>> assert_gradients(lambda t: t.exp(), [x], fast_mode=True)
    """
    __tracebackhide__ = True  # NOTE: pytest shows the caller's line, not this helper's
    options = {"eps": eps, "atol": atol, "rtol": rtol, "fast_mode": fast_mode, "seed": seed}
    gradcheck(fn, inputs, **options)
    if second_order:
        gradgradcheck(fn, inputs, **options)


def assert_checks_pass(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    checks: Sequence[str] = FUNCTION_CHECKS,
    seed: int = 0,
) -> None:
    """Assert that every check of :func:`~tpx_inspect.checks.run_all_checks` passes on
    ``fn(*inputs)``; the error lists each failure with its category and node (nodes that
    no line of the caller's code recorded, e.g. ``fn=tp.sin``, are located at the call).

    >>> import tpx as tp
    >>> assert_checks_pass(lambda t: t.sigmoid().sum(), [tp.ones(3, requires_grad=True)])
    """
    __tracebackhide__ = True  # NOTE: pytest shows the caller's line, not this helper's
    caller = traceback.extract_stack(limit=2)[0]  # the user's call of this helper
    where = f"{caller.filename}:{caller.lineno} in {caller.name}"
    report = run_all_checks(fn, inputs, checks=checks, seed=seed, where=where)
    if not report.passed:
        lines = [f"[{f.category}] {f.where}: {f.message}" for f in report.failures]
        raise AssertionError("tpx_inspect checks failed:\n" + "\n".join(lines))
