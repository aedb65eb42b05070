"""The rich tables of an A/B report (``tpx-inspect ab`` and ``ABReport.render``): steps, the
nodes that differ, losses side by side. Reads the report only, so it imports nothing of ab.

>>> _fmt(None), _fmt(0.000123456)
('', '0.000123')
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from tpx_inspect._ab_compare import Diff, NodeAB, StepAB
from tpx_inspect._cli_tables import _bytes

if TYPE_CHECKING:
    from tpx_inspect.ab import ABReport

__all__ = ["losses_table", "nodes_table", "print_report", "steps_table"]


def _fmt(x: float | None, spec: str = ".3g") -> str:
    if x is None:
        return ""
    return format(x, spec) if math.isfinite(x) else str(x)


def _d(d: Diff | None, rel: bool = False) -> str:
    if d is None:
        return ""
    text = _fmt(d.rel if rel else d.abs)
    return text if d.exact else f"~{text}"


def _where(source: str | None) -> str:
    """``file:line`` of a ``file:line in function`` source (the table's narrow form)."""
    return "" if source is None else source.split(" in ", 1)[0]


def _us(x: float | None) -> str:
    return "" if x is None or math.isnan(x) else f"{x * 1e6:.0f}"


def _interesting(n: NodeAB) -> bool:
    diffs = (n.output, n.grad, n.grads_out)
    changed = any(d is not None and (d.abs != 0.0) for d in diffs)
    return changed or n.saved_bytes_a != n.saved_bytes_b or n.overrides_b is not None


def nodes_table(s: StepAB, limit: int, show_all: bool) -> Table:
    """The nodes of one step that differ (or all), in A's backward order then the rest."""
    table = Table(title=f"step {s.step}: nodes (A graph {s.graph_a}, B graph {s.graph_b})")
    cols = ("node", "op", "scope", "source", "fwd abs", "fwd rel", "grad abs", "grad rel",
            "rule-out abs", "saved A", "saved B", "bwd us A", "bwd us B", "B override")  # fmt: skip
    for c in cols:
        table.add_column(
            c, justify="left" if c in ("op", "scope", "source", "B override") else "right"
        )
    rank = {i: k for k, i in enumerate(s.order)}
    rows = sorted(s.nodes, key=lambda n: rank.get(n.id, len(rank) + n.id))
    rows = [n for n in rows if show_all or _interesting(n)]
    for n in rows[:limit]:
        ov = ", ".join(f"{k} {v}" for k, v in (n.overrides_b or {}).items())
        table.add_row(
            str(n.id), n.title, n.scope, _where(n.source), _d(n.output), _d(n.output, True),
            _d(n.grad), _d(n.grad, True), _d(n.grads_out), str(n.saved_bytes_a),
            str(n.saved_bytes_b), _us(n.backward_seconds_a), _us(n.backward_seconds_b), ov,
        )  # fmt: skip
    if len(rows) > limit:
        table.caption = f"{len(rows) - limit} more rows; --limit or --json shows them"
    return table


def steps_table(r: ABReport) -> Table:
    """One row per compared step: peak saved memory and backward time of A and B."""
    table = Table(title="steps (kept by --steps)")
    for c in ("step", "peak saved A", "peak saved B", "backward ms A", "backward ms B",
              "max fwd abs", "max grad abs"):  # fmt: skip
        table.add_column(c, justify="right")
    for s in r.steps:
        fwd = _max(n.output for n in s.nodes)
        grad = _max(n.grad for n in s.nodes)
        table.add_row(
            str(s.step), _bytes(s.peak_saved_bytes_a), _bytes(s.peak_saved_bytes_b),
            f"{s.backward_seconds_a * 1e3:.2f}", f"{s.backward_seconds_b * 1e3:.2f}",
            _fmt(fwd), _fmt(grad),
        )  # fmt: skip
    return table


def _max(diffs: Any) -> float | None:
    vals = [d.abs for d in diffs if d is not None]
    if not vals:
        return None
    return math.nan if any(math.isnan(v) for v in vals) else max(vals)


def losses_table(r: ABReport, rows: int = 12) -> Table:
    """The loss of A and B at (up to ``rows``) steps spread over the run, always the last."""
    table = Table(title=f"loss per step ({len(r.losses_a)} steps in A, {len(r.losses_b)} in B)")
    for c in ("step", "loss A", "loss B", "B - A"):
        table.add_column(c, justify="right")
    n = max(len(r.losses_a), len(r.losses_b))
    picks = sorted({*range(min(n, 5)), *range(0, n, max(1, n // rows)), n - 1} - {-1})
    for i in picks:
        a = r.losses_a[i] if i < len(r.losses_a) else None
        b = r.losses_b[i] if i < len(r.losses_b) else None
        delta = None if a is None or b is None else b - a
        table.add_row(str(i), _fmt(a, ".6g"), _fmt(b, ".6g"), _fmt(delta, ".3g"))
    return table


def print_report(console: Console, r: ABReport, limit: int, show_all: bool) -> None:
    """The whole report: overrides, steps, the nodes of the first (and diverging) step, the
    losses and the verdict."""
    for run, overrides in (("A", r.overrides_a), ("B", r.overrides)):
        for o in overrides:
            console.print(f"{run} overrides the {o.kind} of {o.op.value} with {o.target}")
    if r.steps:
        console.print(steps_table(r))
        shown = {r.steps[0].step}
        if r.first is not None and r.first.step in {s.step for s in r.steps}:
            shown.add(r.first.step)
        for s in r.steps:
            if s.step in shown:
                console.print(nodes_table(s, limit, show_all))
    if r.losses_a or r.losses_b:
        console.print(losses_table(r))
    tol = f"rtol={r.tolerance.rtol:g}, atol={r.tolerance.atol:g}"
    if r.first is None:
        console.print(f"B matches A within {tol}")
    else:
        console.print(f"B diverges from A ({tol}); first at {r.first.describe()}")
