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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpx_inspect._util import paused_gc
from tpx_inspect.check_view import NodeRecord
from tpx_inspect.checks._differences import (
    NAN_VALUES,
    Comparison,
    Draws,
    NotReplayable,
    Shift,
    Stacked,
    compare_shift,
    complex_reason,
    cotangents,
    in_domain,
    locate_element,
    nan_reason,
    reproduced,
    stack_batch,
    stack_columns,
    stack_recorded,
    usable,
    without_kinks,
)
from tpx_inspect.checks.batched import BatchReplay, groups_of, plan, replayable
from tpx_inspect.checks.cluster import cluster_outcomes
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.replay import Replay
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at
from tpx_inspect.records import Graph


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
    batch_size: int = 512


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
    >>> cs = check_node(rec.graph().replay_nodes[-1], None, LocalOptions())
    >>> len(cs), any(c.failed for c in cs)
    (2, False)
    """
    incoming = [grad_output] if usable(grad_output) else None
    batch = _Batch(BatchReplay([node]), incoming, [recorded], opts)
    if batch.errors[0] is not None:
        raise NotReplayable(batch.errors[0])
    return batch.comparisons(0)


class _Batch:
    """The comparisons of a batch of nodes (one op, one layout), as arrays over the batch.

    Every node draws its directions and cotangents from its own generator, in the same order
    whatever the batch, so a node's comparisons do not depend on the nodes batched with it.
    ``stacked``: the nodes' recorded values already stacked, when the caller has them.
    """

    def __init__(self, replay: BatchReplay, incoming: list | None, recorded: list,
                 opts: LocalOptions, stacked: Stacked | None = None) -> None:  # fmt: skip
        self.replay, self.opts = replay, opts
        self.xs = xs = replay.inputs() if stacked is None else stacked.xs
        self.y = y = replay.forward(xs)
        self.errors = reproduced(replay.nodes, y, None if stacked is None else stacked.outputs)
        if stacked is not None and incoming is not None:
            incoming = stacked.incoming  # type: ignore[assignment]
        differentiable = replay.differentiable()
        shapes = [y.shape[1:]] * opts.cotangents
        shapes += [np.shape(xs[i])[1:] for i in differentiable for _ in range(opts.directions)]
        draws = Draws([n.id for n in replay.nodes], opts.seed, shapes)
        # NOTE: infinite values (a -inf attention mask) are constants of the comparison: no
        # direction moves them and no cotangent weighs an infinite output.
        finite = np.isfinite(y)
        us = [
            (name, np.where(finite, u, 0.0))
            for name, u in cotangents(incoming, opts.cotangents, draws)
        ]
        grads = {name: replay.vjp(xs, y, u) for name, u in us}
        if recorded[0] is not None and us and us[0][0] == "incoming gradient":
            us.insert(0, ("recorded gradient", us[0][1]))
            given = None if stacked is None else stacked.recorded
            grads["recorded gradient"] = stack_recorded(recorded) if given is None else given
        self.slots = []
        for i in differentiable:
            for _ in range(opts.directions):
                v = np.where(np.isfinite(xs[i]), draws.next(), 0.0)
                v = in_domain(replay.nodes[0], i, v)
                shift = Shift.along(replay, xs, i, v * opts.eps, y, opts.eps)
                for name, u in us:
                    numbers = compare_shift(i, name, u, v, shift, grads[name], opts)
                    self.slots.append((i, name, u, v, shift.plus, shift.minus, numbers))
        self.suspect = np.zeros(len(replay), dtype=bool)
        for *_, (num, an, tol, _asym) in self.slots:
            self.suspect |= np.abs(num - an) > tol

    def comparisons(self, b: int) -> list:
        """Node ``b``'s comparisons, with kinks masked where they made one inconclusive."""
        out = []
        for i, name, u, v, plus, minus, (num, an, tol, asym) in self.slots:
            c = Comparison(i, name, float(num[b]), float(an[b]), float(tol[b]), float(asym[b]))
            if c.inconclusive:
                one = slice(b, b + 1)
                replay = BatchReplay([self.replay.nodes[b]])
                xs = [x[one] if a else x for x, a in zip(self.xs, self.replay.is_array)]
                c = without_kinks(replay, xs, c, u[one], v[one], self.y[one], plus[one],
                                   minus[one], self.opts)  # fmt: skip
            out.append(c)
        return out


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


def backward_order(graph: Graph) -> list[int]:
    """Node ids in backward order (that of the first backward, then reverse recording order)."""
    seen: set[int] = set()
    order = []
    for bw in graph.backwards:
        for nid in bw.order:
            if nid not in seen:
                seen.add(nid)
                order.append(nid)
    order += [n.id for n in reversed(graph.replay_nodes) if n.id not in seen]
    return order


@register_check("local", categories=("rule",), rank=10, summary=(
    "each node's forward is rerun in float64 from its recorded inputs; `<u, J v>` by central "
    "differences is compared with `<vjp(u), v>` one input at a time (Details below)."))  # fmt: skip
def local_check(
    graph: Graph,
    opts: LocalOptions | None = None,
    progress: Callable[[int, int], None] | None = None,
    client: Any = None,
) -> CheckResult:
    """Check every node's rule locally; findings come in backward order (first = first bad).

    Nodes of the same op and layout are checked ``opts.batch_size`` at a time (one replay
    for the whole batch); ``batch_size=1`` checks them one by one, with the same findings.
    ``progress(done, total)`` is called after each batch. With ``client`` (a
    ``dask.distributed.Client``) the batches run on its workers, with the same findings.

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
    order = backward_order(graph)
    # NOTE: the batch keys, records and outcomes made here hold no cycles; with the cyclic GC
    # on, their allocations made it rescan them (and at 100k nodes the whole graph) again and
    # again: grouping 20k nodes took 30 us a node instead of 12
    with paused_gc(promote=True):
        if client is not None:
            outcomes, todo = replayable(graph, order)
            groups = groups_of(todo, opts, graph)  # NOTE: made while the workers check
            outcomes.update(cluster_outcomes(client, groups, opts, check_group, progress,
                                             len(order) - len(todo), total=len(todo)))  # fmt: skip
        else:
            outcomes = check_nodes(graph, order, opts, progress)
    findings, checked, skips, notes = [], 0, [], []
    for nid in order:
        if nid not in outcomes:
            continue
        skip, finding, note = outcomes[nid]
        if skip is not None:
            skips.append(Skip(skip, nid))
        else:
            checked += 1
            if finding is not None:
                findings.append(finding)
        if note is not None:
            notes.append(f"{graph.replay_node(nid).where()}: {note}")
    seconds = time.perf_counter() - start
    return CheckResult("local", checked, tuple(findings), len(skips), seconds, tuple(notes),
                       tuple(skips))  # fmt: skip


def check_nodes(
    graph: Graph,
    ids: Sequence[int],
    opts: LocalOptions,
    progress: Callable[[int, int], None] | None = None,
) -> dict[int, tuple]:
    """``{id: (skip reason or None, finding or None, note or None)}`` for the non-leaf nodes
    among ``ids``, checked in batches; the unit of work a cluster worker runs.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     _ = tp.asarray([0.5], requires_grad=True).sin()
    >>> check_nodes(rec.graph(), [0, 1], LocalOptions())
    {1: (None, None, None)}
    """
    out, groups = plan(graph, ids, opts)
    done, total = len(out), len(out) + sum(len(g) for g in groups)
    for group in groups:
        out.update(check_group(group, opts))
        done += len(group)
        if progress is not None:
            progress(done, total)
    return out


def check_group(items: list, opts: LocalOptions, columns: tuple | None = None) -> dict[int, tuple]:
    """Outcomes of nodes of one layout: their values stacked once, the nodes with NaN values
    skipped, the others checked in one batch per kind of incoming gradient (usable or not).

    ``columns``: the group's values already stacked (``(inputs, output, grad_output,
    grad_inputs)``, as :func:`~tpx_inspect.checks.cluster.pack` ships them), read instead of
    stacking the nodes' values again."""
    reason = complex_reason(items[0][0])  # NOTE: one dtype for all nodes of a layout
    if reason is not None:
        return {node.id: (reason, None, None) for node, _ in items}
    if len(items) == 1:
        node, ex = items[0]
        reason = nan_reason(node)
        if reason is not None:
            return {node.id: (reason, None, None)}
        return _check_batch([(node, ex, ex is not None and usable(ex.grad_output))], opts)
    try:
        replay = BatchReplay([node for node, _ in items])
        grads = None if items[0][1] is None else [ex.grad_output for _, ex in items]
        given = None if columns is None else stack_columns(replay, *columns)
        stacked = stack_batch(replay, grads, given)
    except Exception:  # NOTE: values that do not stack: each node on its own
        return {k: v for item in items for k, v in check_group([item], opts).items()}
    out = {items[r][0].id: (NAN_VALUES, None, None) for r in np.flatnonzero(stacked.nan)}
    for good in (True, False):
        rows = np.flatnonzero(~stacked.nan & (stacked.usable == good))
        if len(rows):
            part = [(*items[r], good) for r in rows.tolist()]
            out.update(_check_batch(part, opts, stacked.rows(rows)))
    return out


def _check_batch(items: list, opts: LocalOptions, stacked: Stacked | None = None) -> dict:
    """Outcomes of a batch; a batch that fails as a whole is checked node by node."""
    nodes = [item[0] for item in items]
    execs = [(None, None) if ex is None else (ex.grad_output, ex.grad_inputs) for _, ex, _ in items]
    incoming = [e[0] for e in execs] if items[0][2] else None
    try:
        batch = _Batch(BatchReplay(nodes), incoming, [e[1] for e in execs], opts, stacked)
    except Exception as e:  # NOTE: a node that cannot be replayed is skipped, not failed
        if len(items) > 1:
            return {k: v for item in items for k, v in _check_batch([item], opts).items()}
        return {nodes[0].id: _replay_failed(e)}
    out = {}
    for b, (node, (incoming, recorded)) in enumerate(zip(nodes, execs)):
        try:
            if batch.errors[b] is not None:
                raise NotReplayable(batch.errors[b])
            out[node.id] = _judge(node, batch, b, incoming, recorded, opts)
        except Exception as e:
            out[node.id] = _replay_failed(e)
    return out


def _replay_failed(e: Exception) -> tuple:
    return f"replay failed: {type(e).__name__}", None, f"skipped, {e}"


_KINK = "not differentiable at the recorded point (a kink: relu at 0, ties)"


def _judge(node: NodeRecord, batch: _Batch, b: int, incoming: Any, recorded: Any,
           opts: LocalOptions) -> tuple:  # fmt: skip
    """``(skip, finding, note)`` for node ``b`` of a batch."""
    if not batch.suspect[b]:
        return None, None, None
    comparisons = batch.comparisons(b)
    bad = [c for c in comparisons if c.failed]
    if bad:
        return None, _finding(node, bad[0], _locate(node, bad[0], incoming, recorded, opts)), None
    if any(c.inconclusive for c in comparisons):
        return _KINK, None, None
    if any(c.cotangent.endswith("(kink elements masked)") for c in comparisons):
        return None, None, "at a kink (relu at 0, ties); checked on smooth elements"
    return None, None, None


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
