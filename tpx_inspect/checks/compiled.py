"""Replay vs eager: a plan recorded by ``tpx.compile`` must compute what eager TPX computes.

The function runs with a backward (as :func:`~tpx_inspect.checks.runner.capture_call` does)
eagerly and through ``tpx.compile``: one recording call, then replays, each on fresh leaves.
Every output and every leaf gradient of each replay must equal the eager call's bit for bit
(same backend, same dtype). A function that ``tpx.compile`` cannot replay (a graph break) is
reported as skipped, with the reason, never as passed.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

import tpx
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.report import CheckResult, Finding, Report, Skip


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
        "and source line. `tpx-inspect check SCRIPT` also runs it on every compiled function "
        "the script calls: its first two replays, each in a forked copy of the process, against "
        "the eager call from the same state (outputs, parameters, `.grad`, optimizer and "
        "scheduler state)."
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


def _compare(
    eager: list, replayed: list, call: int, compiled: Any, names: Sequence[str] = ()
) -> list[Finding]:
    """Findings for the values that differ; ``names`` names the values after the returned
    ones (the state of :meth:`tpx.CompiledCall.state`)."""
    if len(eager) != len(replayed):
        return [Finding("replay", f"replay {call} returned {len(replayed)} values, eager "
                                  f"{len(eager)}")]  # fmt: skip
    findings = []
    for k, (a, b) in enumerate(zip(eager, replayed)):
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            diff = _max_diff(a, b)
            op, name, source = _producer(compiled, k)
            what = f"value {k}"
            if k >= len(eager) - len(names):
                what = names[k - len(eager) + len(names)]
            findings.append(
                Finding(
                    "replay",
                    f"replay {call}: {what} ({a.shape} {a.dtype}) differs from eager "
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
    plans = compiled.describe()
    if not plans:
        return None, None, None
    outputs = plans[-1]["outputs"]
    if k >= len(outputs):
        return None, None, None
    for kernel in reversed(plans[-1]["kernels"]):
        if kernel["output"] == outputs[k]:
            return kernel["op"], kernel["node"], kernel["source"]
    return None, None, None


def _max_diff(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape:
        return f"shapes {a.shape} vs {b.shape}"
    with np.errstate(all="ignore"):
        return f"{float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.3g}"


# -- scripts: `tpx-inspect check SCRIPT` ---------------------------------------------------------

_TIMEOUT_S = 300.0  # a replay in the forked process that takes longer is reported, then killed


class ScriptReplays:
    """The replay check of a script: while :func:`replaying` is active, the first call of each
    signature of a ``tpx.compile`` function records its plan (the capture sees the eager call);
    the next ``per_function`` calls replay the plan in a forked copy of the process, from the
    very same state, while this process runs the call eagerly (what the capture and the rest of
    the script see); outputs, parameters and their ``.grad``, and the state dicts of the
    optimizers and schedulers the plan's islands step, after the call are compared bit
    for bit. Later calls run eagerly."""

    def __init__(self, per_function: int = 2) -> None:
        self.per_function = per_function
        self.checked: dict[int, int] = {}
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.skips: list[Skip] = []
        self.compared = 0
        self.used = False
        self.start = time.perf_counter()

    def __call__(self, call: Any) -> Any:
        self.used = True
        if call.plan is None:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = call.record()
            self._note_breaks(call, caught)
            return out
        done = self.checked.get(id(call.compiled), 0)
        if done >= self.per_function or not hasattr(os, "fork"):
            if not hasattr(os, "fork"):
                self._skip(call, "replaying next to eager needs os.fork (not on this platform)")
            return call.eager()
        self.checked[id(call.compiled)] = done + 1
        return self._compare(call, done + 1)

    def _compare(self, call: Any, n: int) -> Any:
        replayed = _forked(lambda: _values(call.replay(), call.state()))
        out = call.eager()
        name = getattr(call.compiled, "__qualname__", "a compiled function")
        if isinstance(replayed, str):
            self.findings.append(Finding("replay", f"{name}: the replay failed: {replayed}"))
            return out
        state = call.state()
        eager = _values(out, state)
        self.compared += 1
        found = _compare(eager, replayed, n, call.compiled, [s for s, _ in state])
        self.findings += [_with_name(f, name) for f in found]
        return out

    def _note_breaks(self, call: Any, caught: list) -> None:
        for w in caught:
            if w.category is tpx.CompileWarning and "eager island" in str(w.message):
                if str(w.message) not in self.notes:  # NOTE: still replayed and compared
                    self.notes.append(str(w.message))
            elif w.category is tpx.CompileWarning:
                self._skip(call, str(w.message))
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    def _skip(self, call: Any, reason: str) -> None:
        if reason not in self.notes:
            self.notes.append(reason)
            self.skips.append(Skip(reason))

    def result(self) -> CheckResult | None:
        """The check's result; None when the script called no compiled function."""
        if not self.used:
            return None
        seconds = time.perf_counter() - self.start
        if self.compared:
            self.notes.insert(0, f"{self.compared} replay(s) compared with eager calls, bitwise")
        elif not self.skips:
            note = "no compiled function was called twice with one signature: nothing replayed"
            self.skips.append(Skip(note))
            self.notes.append(note)
        return CheckResult("replay", self.compared, tuple(self.findings), len(self.skips),
                           seconds, tuple(self.notes), tuple(self.skips))  # fmt: skip


@contextlib.contextmanager
def replaying(per_function: int = 2) -> Iterator[ScriptReplays]:
    """Check the replays of every ``tpx.compile`` function called inside the block (see
    :class:`ScriptReplays`).

    >>> import tpx as tp
    >>> w = tp.ones(3, requires_grad=True)
    >>> @tp.compile
    ... def step(x):
    ...     w.grad = None
    ...     (w * x).sum().backward()
    ...     with tp.no_grad():
    ...         w.sub_(0.1 * w.grad)
    >>> with replaying() as check:
    ...     for _ in range(4):
    ...         step(tp.full((3,), 2.0))
    >>> r = check.result(); r.passed, r.checked
    (True, 2)
    """
    check = ScriptReplays(per_function)
    with tpx.CompiledFunction.intercept(check):
        yield check


def add_to(report: Report, check: ScriptReplays) -> Report:
    """``report`` with the replay check's result appended (unchanged when no compiled
    function ran)."""
    result = check.result()
    return report if result is None else Report((*report.results, result), report.strict)


def _with_name(f: Finding, name: str) -> Finding:
    import dataclasses

    return dataclasses.replace(f, message=f"{name}: {f.message}")


def _values(out: Any, state: list[tuple[str, Any]]) -> list[np.ndarray]:
    """The call's returned tensors, then every state value (parameters, their gradients,
    the optimizers' and schedulers' state dicts) as NumPy arrays: an absent gradient as an
    empty array with a marker shape, a number or flag as a 0-d array of its type."""
    values = [np.array(t.numpy()) for t in _tensors(out)]
    return values + [_state_array(v) for _, v in state]


def _state_array(v: Any) -> np.ndarray:
    if v is None:
        return np.zeros((0, 7), np.int8)
    if isinstance(v, tpx.Tensor):
        return np.array(v.numpy())
    if isinstance(v, (np.ndarray, np.generic, bool, int, float, complex)):
        return np.array(v)
    return np.frombuffer(repr(v).encode(), np.uint8)  # NOTE: compared by its text


def _tensors(x: Any) -> list[Any]:
    if isinstance(x, tpx.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _forked(run: Callable[[], list[np.ndarray]]) -> list[np.ndarray] | str:
    """``run()`` in a forked copy of this process; its arrays come back through a pipe
    (``np.save``, no pickle). A string is the error the copy reported."""
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork in a threaded process
        pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.close(r)
        _child(run, w)
    os.close(w)
    try:
        data = _read_all(r, pid)
    finally:
        os.close(r)
    _, status = os.waitpid(pid, 0)
    if data is None:
        return f"no answer within {_TIMEOUT_S:.0f} s"
    if not data:
        return f"the replaying process ended with status {status}"
    return _decode(data)


def _child(run: Callable[[], list[np.ndarray]], w: int) -> None:  # pragma: no cover
    buf = io.BytesIO()
    try:
        arrays = run()
        np.save(buf, np.array(len(arrays)), allow_pickle=False)
        for a in arrays:
            np.save(buf, a, allow_pickle=False)
    except BaseException as e:  # NOTE: reported to the parent, never raised in the copy
        buf = io.BytesIO()
        np.save(buf, np.array(-1), allow_pickle=False)
        np.save(buf, np.frombuffer(f"{type(e).__name__}: {e}".encode(), np.uint8))
    with contextlib.suppress(OSError):
        view = memoryview(buf.getvalue())
        while view:
            view = view[os.write(w, view) :]
    os._exit(0)


def _read_all(r: int, pid: int) -> bytes | None:
    chunks, deadline = [], time.monotonic() + _TIMEOUT_S
    while True:
        ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, 9)
            return None
        chunk = os.read(r, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _decode(data: bytes) -> list[np.ndarray] | str:
    f = io.BytesIO(data)
    n = int(np.load(f, allow_pickle=False))
    if n < 0:
        return bytes(np.load(f, allow_pickle=False)).decode(errors="replace")
    return [np.load(f, allow_pickle=False) for _ in range(n)]
