"""The per-node local check: each node's rule against finite differences of its own forward.

For every node of a recorded graph, the forward is rerun in float64 from the node's real
recorded inputs, and ``<u, J v>`` from central differences along a random direction ``v`` of
one input is compared with ``<vjp(u), v>`` from the node's rule, for ``u`` the node's real
incoming gradient and random cotangents. Checking one input at a time says which input's
gradient is wrong. Where the left and right differences disagree as much as the mismatch, the
point is not differentiable along ``v`` (a relu at 0, a max tie) and the comparison is counted
as inconclusive rather than failed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpx_inspect.checks.record import GraphRecord, NodeRecord
from tpx_inspect.checks.replay import Replay, why_not_replayable
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at

_EPS64 = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class LocalOptions:
    """Step, tolerances and how many random directions/cotangents the local check uses.

    ``rtol32`` applies to recorded gradients computed in float32 (or narrower).

    >>> LocalOptions(directions=1).eps
    1e-06
    """

    eps: float = 1e-6
    atol: float = 1e-8
    rtol: float = 1e-5
    rtol32: float = 1e-3
    directions: int = 2
    locate_limit: int = 512
    cotangents: int = 1
    seed: int = 0


@dataclass(frozen=True)
class Comparison:
    """One scalar comparison ``<u, J v>`` (numerical) against ``<vjp(u), v>`` (analytical)."""

    input: int
    cotangent: str
    numerical: float
    analytical: float
    tolerance: float
    asymmetry: float

    @property
    def mismatch(self) -> float:
        """``|numerical - analytical|``."""
        return abs(self.numerical - self.analytical)

    @property
    def failed(self) -> bool:
        """Out of tolerance, and not explained by a kink (left/right differences)."""
        return self.mismatch > self.tolerance + self.asymmetry

    @property
    def inconclusive(self) -> bool:
        """Out of tolerance, but the point is not differentiable along the direction."""
        return self.mismatch > self.tolerance and not self.failed


def check_node(
    node: NodeRecord,
    grad_output: np.ndarray | None,
    opts: LocalOptions,
    recorded: tuple | None = None,
) -> list:
    """Every :class:`Comparison` for one node (empty when it has nothing to differentiate).

    The rule is replayed on the real incoming gradient ``grad_output`` and on random
    cotangents; ``recorded`` (the gradients the rule returned in the recorded backward, from
    ``grad_output``) is compared too, which is what an offline check of a saved trace can
    verify even when the rule that ran is not the one registered now.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     _ = tp.asarray([0.5, 1.5], requires_grad=True).sin()
    >>> cs = check_node(rec.graph().nodes[-1], None, LocalOptions())
    >>> len(cs), any(c.failed for c in cs)
    (2, False)
    """
    replay = Replay(node)
    xs = replay.inputs()
    y = replay.forward(xs)
    _require_reproduced(node, y)
    rng = np.random.default_rng([opts.seed, node.id])
    # NOTE: infinite values (a -inf attention mask) are constants of the comparison: no
    # direction moves them and no cotangent weighs an infinite output.
    finite = np.isfinite(y)
    us = [
        (name, np.where(finite, u, 0.0))
        for name, u in _cotangents(y, grad_output, opts.cotangents, rng)
    ]
    grads = {name: replay.vjp(xs, y, u) for name, u in us}
    if recorded is not None and us and us[0][0] == "incoming gradient":
        us.insert(0, ("recorded gradient", us[0][1]))
        grads["recorded gradient"] = recorded
    out = []
    for i in replay.differentiable():
        for _ in range(opts.directions):
            v = np.where(np.isfinite(xs[i]), rng.standard_normal(np.shape(xs[i])), 0.0)
            plus, minus = _shifted(replay, xs, i, v * opts.eps)
            for name, u in us:
                c = _compare(i, name, u, v, y, plus, minus, grads[name], opts)
                if c.inconclusive:
                    c = _without_kinks(replay, xs, c, u, v, y, plus, minus, opts)
                out.append(c)
    return out


def _without_kinks(replay, xs, c, u, v, y, plus, minus, opts) -> Comparison:
    """Compare again with the cotangent zeroed on the output elements at a kink.

    A wrong rule stays visible on the smooth elements; a comparison that only the kinks
    made inconclusive becomes a pass or a failure.
    """
    h = opts.eps
    onesided = np.abs(_sub(plus, y) - _sub(y, minus)) / h
    central = _sub(plus, minus) / (2 * h)
    smooth = onesided <= 1e-2 * np.abs(central) + 1e-6
    if smooth.all() or not smooth.any():
        return c
    masked = np.where(smooth, u, 0.0)
    grads = replay.vjp(xs, y, masked)
    again = _compare(c.input, c.cotangent, masked, v, y, plus, minus, grads, opts)
    name = f"{c.cotangent} (kink elements masked)"
    return Comparison(c.input, name, again.numerical, again.analytical, again.tolerance,
                      again.asymmetry)  # fmt: skip


class NotReplayable(Exception):
    """The node's forward cannot be rerun faithfully from its recorded inputs."""


def _require_reproduced(node: NodeRecord, y: np.ndarray) -> None:
    """Raise :class:`NotReplayable` unless the replayed output matches the recorded one."""
    out = node.output
    if out is None:
        return
    if np.shape(out) != np.shape(y):
        raise NotReplayable(f"replay gives shape {np.shape(y)}, recorded {np.shape(out)}")
    out = np.asarray(out, dtype=np.float64)
    rtol = 1e-3 if np.asarray(node.output).dtype.itemsize <= 4 else 1e-8
    finite = out[np.isfinite(out)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    if not np.allclose(y, out, rtol=rtol, atol=rtol * scale + 1e-12):
        raise NotReplayable(
            "rerunning its forward from the recorded inputs does not reproduce the recorded "
            "output (random, stateful or with inputs the record lacks)"
        )


def locate_element(
    node: NodeRecord, input: int, u: np.ndarray, analytical: np.ndarray, opts: LocalOptions
) -> tuple[tuple[int, ...], float, float] | None:
    """The element of input ``input`` where ``u^T J`` (central differences) and the rule's
    gradient ``analytical`` differ most: ``(index, numerical, analytical)``; None for inputs
    larger than ``opts.locate_limit`` elements."""
    replay = Replay(node)
    xs = replay.inputs()
    x = np.asarray(xs[input])
    if x.size > opts.locate_limit:
        return None
    analytical = np.asarray(analytical, dtype=np.float64).reshape(x.shape)
    analytical = np.where(np.isfinite(x), np.nan_to_num(analytical), 0.0)
    u = np.where(np.isfinite(np.asarray(node.output)), u, 0.0)
    numerical = np.zeros(x.shape)
    for j in np.ndindex(*x.shape):
        if not np.isfinite(x[j]):
            continue
        step = np.zeros(x.shape)
        step[j] = opts.eps
        plus, minus = _shifted(replay, xs, input, step)
        numerical[j] = np.sum(u * _sub(plus, minus)) / (2 * opts.eps)
    worst = np.unravel_index(int(np.argmax(np.abs(numerical - analytical))), x.shape)
    index = tuple(int(k) for k in worst)
    return index, float(numerical[worst]), float(analytical[worst])


def _cotangents(y: np.ndarray, real: np.ndarray | None, n: int, rng: Any) -> list:
    us = []
    if real is not None and np.isfinite(real).all() and np.any(real):
        us.append(("incoming gradient", np.asarray(real, dtype=np.float64)))
    us += [(f"random cotangent {k}", rng.standard_normal(y.shape)) for k in range(n)]
    return us


def _shifted(replay: Replay, xs: list, i: int, step: np.ndarray) -> tuple:
    values = []
    for sign in (1.0, -1.0):
        moved = list(xs)
        moved[i] = np.asarray(xs[i] + sign * step)
        values.append(replay.forward(moved))
    return values[0], values[1]


def _sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` where both are finite, 0 elsewhere (infinite outputs are constants)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(a) & np.isfinite(b), a - b, 0.0)


def _dot(g: Any, v: np.ndarray) -> float:
    """``<g, v>`` over the elements that ``v`` moves (NaN where shapes differ)."""
    if np.shape(g) != np.shape(v):
        return float("nan")
    with np.errstate(invalid="ignore"):
        return float(np.sum(np.where(v != 0, np.asarray(g, dtype=np.float64) * v, 0.0)))


def _compare(i, name, u, v, y, plus, minus, grads, opts) -> Comparison:
    h = opts.eps
    central = _sub(plus, minus) / (2 * h)
    numerical = float(np.sum(u * central))
    gi = grads[i] if i < len(grads) else None
    analytical = 0.0 if gi is None else _dot(gi, v)
    # NOTE: elementwise, so that kinks of opposite sign cannot cancel out.
    asym = float(np.sum(np.abs(u) * np.abs(_sub(plus, y) - _sub(y, minus)))) / h
    scale = float(np.sum(np.abs(u * central))) + abs(analytical)
    size = np.where(np.isfinite(plus) & np.isfinite(minus), np.abs(plus) + np.abs(minus), 0.0)
    roundoff = 64 * _EPS64 * float(np.sum(np.abs(u) * size)) / h
    rtol = opts.rtol
    if name == "recorded gradient" and gi is not None and np.asarray(gi).dtype.itemsize <= 4:
        rtol = max(rtol, opts.rtol32)  # the rule ran in float32
    tol = opts.atol + rtol * scale + roundoff
    return Comparison(i, name, numerical, analytical, tol, asym)


def _finding(node: NodeRecord, c: Comparison, element: tuple | None = None) -> Finding:
    where = ""
    extra: dict[str, Any] = {}
    if element is not None:
        index, num, an = element
        where = f"; worst element {list(index)}: numerical {num:.6g}, analytical {an:.6g}"
        extra = {"element": list(index), "element_numerical": num, "element_analytical": an}
    return finding_at(
        node, "rule",
        f"the rule of {node.op.value if node.op is not None else node.name} ({node.name}) "
        f"disagrees with finite differences of its forward for input {c.input} along the "
        f"{c.cotangent}: numerical {c.numerical:.6g}, analytical {c.analytical:.6g} "
        f"(|diff| {c.mismatch:.3g} > tolerance {c.tolerance:.3g}){where}",
        input=c.input, cotangent=c.cotangent, numerical=c.numerical,
        analytical=c.analytical, tolerance=c.tolerance, **extra,
    )  # fmt: skip


def backward_order(graph: GraphRecord) -> list[int]:
    """Node ids in backward order (that of the first backward, then reverse recording order)."""
    seen: set[int] = set()
    order = []
    for bw in graph.backwards:
        for nid in bw.order:
            if nid not in seen:
                seen.add(nid)
                order.append(nid)
    order += [n.id for n in reversed(graph.nodes) if n.id not in seen]
    return order


def local_check(graph: GraphRecord, opts: LocalOptions | None = None) -> CheckResult:
    """Check every node's rule locally; findings come in backward order (first = first bad).

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     x = tp.asarray([0.5, 1.5], dtype=tp.float64, requires_grad=True)
    ...     (x.sin() * x).sum().backward()
    >>> r = local_check(rec.graph())
    >>> r.passed, r.checked
    (True, 3)
    """
    opts = opts or LocalOptions()
    start = time.perf_counter()
    findings, checked, skips, notes = [], 0, [], []
    for nid in backward_order(graph):
        node = graph.node(nid)
        if node.is_leaf:
            continue
        reason = why_not_replayable(node) or _nonfinite(node)
        if reason is not None:
            skips.append(Skip(reason, nid))
            continue
        ex = graph.execution(nid)
        try:
            finding, note = _check_one(node, ex, opts)
        except Exception as e:  # NOTE: a node that cannot be replayed is skipped, not failed
            skips.append(Skip(f"replay failed: {type(e).__name__}", nid))
            notes.append(f"{node.where()}: skipped, {e}")
            continue
        if note == _KINK:
            skips.append(Skip(_KINK, nid))
            continue
        checked += 1
        if finding is not None:
            findings.append(finding)
        if note is not None:
            notes.append(f"{node.where()}: {note}")
    seconds = time.perf_counter() - start
    return CheckResult("local", checked, tuple(findings), len(skips), seconds, tuple(notes),
                       tuple(skips))  # fmt: skip


_KINK = "not differentiable at the recorded point (a kink: relu at 0, ties)"


def _check_one(node: NodeRecord, ex: Any, opts: LocalOptions) -> tuple:
    """``(finding or None, note or None)`` for one replayable node."""
    incoming, recorded = (None, None) if ex is None else (ex.grad_output, ex.grad_inputs)
    comparisons = check_node(node, incoming, opts, recorded)
    bad = [c for c in comparisons if c.failed]
    if bad:
        return _finding(node, bad[0], _locate(node, bad[0], incoming, recorded, opts)), None
    if any(c.inconclusive for c in comparisons):
        return None, _KINK
    if any(c.cotangent.endswith("(kink elements masked)") for c in comparisons):
        return None, "at a kink (relu at 0, ties); checked on smooth elements"
    return None, None


def _locate(
    node: NodeRecord, c: Comparison, incoming: Any, recorded: Any, opts: LocalOptions
) -> tuple | None:
    if c.cotangent not in ("recorded gradient", "incoming gradient"):
        return None
    u = np.asarray(incoming, dtype=np.float64)
    if c.cotangent == "recorded gradient":
        analytical = recorded[c.input]
    else:
        replay = Replay(node)
        xs = replay.inputs()
        analytical = replay.vjp(xs, replay.forward(xs), u)[c.input]
    if analytical is None:
        analytical = np.zeros(np.shape(node.inputs[c.input]))
    return locate_element(node, c.input, u, analytical, opts)


def _nonfinite(node: NodeRecord) -> str | None:
    values = [x for x in node.inputs or () if isinstance(x, np.ndarray) and x.dtype.kind == "f"]
    values.append(node.output)
    if any(np.isnan(v).any() for v in values if v is not None):
        return "NaN values (see the nonfinite check)"
    return None
