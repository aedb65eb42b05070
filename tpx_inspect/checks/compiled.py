"""Replay vs eager: a plan recorded by ``tpx.compile`` must compute what eager TPX computes.

The function runs with a backward (as :func:`~tpx_inspect.checks.runner.capture_call` does)
eagerly and through ``tpx.compile``: one recording call, then replays, each on fresh leaves.
Every output and every leaf gradient of each replay must equal the eager call's bit for bit
(same backend, same dtype). A function that ``tpx.compile`` cannot replay (a graph break) is
reported as skipped, with the reason, never as passed.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tpx
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.report import CheckResult, Finding, Skip


def _fresh(x: Any) -> Any:
    if isinstance(x, tpx.Tensor) and x.requires_grad:
        return x.detach().requires_grad_(True)
    return x


def _differentiable(out: Any) -> list[Any]:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, tpx.Tensor) and o.requires_grad]


def _step(fn: Callable[..., Any], n_inputs: int) -> Callable[..., Any]:
    """``fn`` plus a backward from its differentiable outputs with the given cotangents,
    returning the outputs (no graph) and the leaves' gradients."""

    def step(*args: Any) -> Any:
        inputs, cotangents = args[:n_inputs], args[n_inputs:]
        outs = _differentiable(fn(*inputs))
        tpx.backward(outs, list(cotangents))
        grads = [x.grad for x in inputs if isinstance(x, tpx.Tensor) and x.requires_grad]
        return [o.detach() for o in outs], grads

    return step


def _cotangents(fn: Callable[..., Any], inputs: Sequence[Any], seed: int) -> list[Any]:
    """One cotangent per differentiable output (1 for a one-element output), made here:
    a tensor made inside the compiled step would be a graph break."""
    outs = _differentiable(fn(*[_fresh(x) for x in inputs]))
    rng = np.random.default_rng(seed)
    values = [np.ones(o.shape) if o.size == 1 else rng.standard_normal(o.shape) for o in outs]
    return [tpx.asarray(v, dtype=o.dtype).to(backend=o.backend) for v, o in zip(values, outs)]


def _flat(result: Any) -> list[np.ndarray]:
    outs, grads = result
    return [np.array(t.numpy()) for t in [*outs, *grads] if t is not None]


@register_check(
    "replay",
    subject="function",
    rank=70,
    summary=(
        "the plan `tpx.compile` records for the function is replayed twice and compared bitwise "
        "with eager calls; a difference names the plan's kernel that made the value, its node "
        "and source line."
    ),
)
def replay_check(
    fn: Callable[..., Any], inputs: Sequence[Any], *, seed: int = 0, replays: int = 2
) -> CheckResult:
    """Compare ``replays`` replays of ``fn``'s recorded plan with eager calls, bitwise.

    >>> import tpx as tp
    >>> x = tp.asarray([0.5, -1.0, 2.0], requires_grad=True)
    >>> r = replay_check(lambda a: (a * a).tanh(), [x])
    >>> r.passed, r.checked, r.skipped
    (True, 2, 0)
    """
    start = time.perf_counter()
    cotangents = _cotangents(fn, inputs, seed)
    step = _step(fn, len(inputs))

    def eager() -> list[np.ndarray]:
        return _flat(step(*[_fresh(x) for x in inputs], *cotangents))

    if not _same(eager(), eager()):  # NOTE: a replay can only be compared with a repeatable call
        note = "two eager calls differ (the function changes state, e.g. running statistics)"
        return CheckResult("replay", 0, (), replays, time.perf_counter() - start, (note,),
                           (Skip(note),))  # fmt: skip
    compiled = tpx.compile(step)
    findings: list[Finding] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(*[_fresh(x) for x in inputs], *cotangents)  # records
        for call in range(1, replays + 1):
            if compiled.stats.eager_calls or not compiled.plans():
                break
            reference = eager()
            replayed = _flat(compiled(*[_fresh(x) for x in inputs], *cotangents))
            findings += _compare(reference, replayed, call, compiled)
    breaks = [str(w.message) for w in caught if w.category is tpx.CompileWarning]
    seconds = time.perf_counter() - start
    if breaks or compiled.stats.replays == 0:
        note = breaks[0] if breaks else "tpx.compile did not replay the function"
        return CheckResult("replay", 0, (), replays, seconds, (note,), (Skip(note),))
    n = compiled.stats.replays
    note = f"{n} replay(s) of a {len(compiled.plans()[-1].steps)}-kernel plan against eager calls"
    return CheckResult("replay", n, tuple(findings), 0, seconds, (note,))


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(a, b)
    )


def _compare(eager: list, replayed: list, call: int, compiled: Any) -> list[Finding]:
    if len(eager) != len(replayed):
        return [Finding("replay", f"replay {call} returned {len(replayed)} values, eager "
                                  f"{len(eager)}")]  # fmt: skip
    findings = []
    for k, (a, b) in enumerate(zip(eager, replayed)):
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            diff = _max_diff(a, b)
            op, name, source = _producer(compiled, k)
            findings.append(
                Finding(
                    "replay",
                    f"replay {call}: value {k} ({a.shape} {a.dtype}) differs from eager "
                    f"(max abs difference {diff})",
                    op=op,
                    name=name,
                    source=source or "",
                    details={"call": call, "value": k},
                )
            )
    return findings


def _producer(compiled: Any, k: int) -> tuple[str | None, str | None, str | None]:
    """The kernel of the plan that made returned value ``k``: its op, the GradFn node it
    came from and the source line (None when an argument or a constant is returned)."""
    plans = compiled.plans()
    if not plans:
        return None, None, None
    slots = plans[-1].output_slots
    if k >= len(slots):
        return None, None, None
    for step in reversed(plans[-1].steps):
        if step.out == slots[k]:
            origin = (*step.origin, None, None, None, None)
            return step.op, origin[2], origin[3]
    return None, None, None


def _max_diff(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape:
        return f"shapes {a.shape} vs {b.shape}"
    with np.errstate(all="ignore"):
        return f"{float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.3g}"
