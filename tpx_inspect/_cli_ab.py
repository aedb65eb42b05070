"""``tpx-inspect ab``: a rule or kernel experiment, A (as is) against B (with overrides).

A thin command over :func:`tpx_inspect.ab.run_ab` (a script) and
:func:`tpx_inspect._ab_offline.replay_ab` (a saved trace: only the backward is re-run), plus
the rich tables that show the report side by side.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from tpx_inspect._ab_compare import Diff, NodeAB, StepAB, Tolerance
from tpx_inspect._cli_tables import _bytes
from tpx_inspect.ab import ABError, ABReport, parse_override, run_ab

__all__ = ["ab", "print_report"]


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


def _report(target: str, args: tuple[str, ...], overrides: list, opts: dict) -> ABReport:
    from tpx_inspect._cli_base import load_trace

    path = Path(target)
    propagate = opts.pop("propagate")
    if path.suffix == ".py":
        if propagate:
            raise ABError("--propagate applies to a saved TRACE (a script's B run is real)")
        return run_ab(target, args, overrides, **opts)
    if args:
        raise ABError(
            f"extra arguments {' '.join(args)!r} after a trace (only a script takes them)"
        )
    from tpx_inspect._ab_offline import replay_ab

    if any(o.kind == "kernel" for o in overrides):
        raise ABError("a saved trace re-runs only the backward: --kernel needs a script")
    return replay_ab(load_trace(target), overrides, opts["tolerance"], propagate)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--rule", "rules", multiple=True, metavar="OP=MODULE:FUNCTION",
              help="Replace the gradient rule of OP in run B (repeatable).")  # fmt: skip
@click.option("--kernel", "kernels", multiple=True, metavar="OP=MODULE:FUNCTION",
              help="Replace the kernel of OP in run B (repeatable).")  # fmt: skip
@click.option("--backend", default=None, help="Backend whose kernels --kernel replaces.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of both runs.")
@click.option("--steps", default="first:5", show_default=True,
              help="Backward steps compared node by node (a capture policy).")  # fmt: skip
@click.option("--values", type=click.Choice(["none", "small", "all"]), default="small",
              show_default=True,
              help="Full values kept (exact differences); else norms are compared.")  # fmt: skip
@click.option("--value-limit", type=click.IntRange(0), default=1 << 17, show_default=True,
              help="Largest tensor (elements) kept under --values small.")  # fmt: skip
@click.option("--rtol", type=click.FloatRange(0), default=1e-5, show_default=True)
@click.option("--atol", type=click.FloatRange(0), default=1e-8, show_default=True)
@click.option("--limit", type=click.IntRange(1), default=25, show_default=True,
              help="Most node rows per table.")  # fmt: skip
@click.option("--all", "show_all", is_flag=True, help="List nodes without differences too.")
@click.option("--propagate", is_flag=True,
              help="With a TRACE: run every node's rule from the root, so B's gradients reach "
              "every node (needs every value kept).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-o", "--out", type=click.Path(file_okay=False),
              help="Also save the traces of A and B there (a.json, b.json).")  # fmt: skip
@click.pass_context
def ab(ctx: click.Context, target: str, args: tuple[str, ...], rules: tuple[str, ...],
       kernels: tuple[str, ...], backend: str | None, seed: int, steps: str, rtol: float,
       atol: float, values: str, value_limit: int, limit: int, show_all: bool,
       propagate: bool, as_json: bool, out: str | None) -> None:  # fmt: skip
    """Run SCRIPT [ARGS...] twice with the same seed, A as it is and B with the overridden
    rules/kernels, and compare them node by node: forward values, gradients, saved memory,
    backward time, the loss of every step and the first node where B diverges. Given a saved
    TRACE instead, re-run only its backward with the overridden rules, node by node from the
    recorded incoming gradients. Exit 0: B matches A within the tolerance; 1: it diverges.

    \b
    Example:
      tpx-inspect ab train.py --rule tanh=myrules:tanh_vjp --steps first:3 -- --epochs 1
      tpx-inspect ab tpx-runs/mlp --rule gelu=myrules:gelu_tanh_vjp --json
    """
    overrides = [parse_override("rule", s) for s in rules]
    overrides += [parse_override("kernel", s, backend) for s in kernels]
    opts = {"seed": seed, "steps": steps, "tolerance": Tolerance(rtol, atol), "values": values,
            "value_limit": value_limit, "propagate": propagate}  # fmt: skip
    # NOTE: the script's own prints go to stderr, so stdout is the report alone
    with contextlib.redirect_stdout(sys.stderr):
        report = _report(target, args, overrides, opts)
    if out is not None:
        _save(report, Path(out))
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
    else:
        console = Console(file=click.get_text_stream("stdout"), soft_wrap=True, width=200)
        print_report(console, report, limit, show_all)
    ctx.exit(report.exit_code)


def _save(report: ABReport, folder: Path) -> None:
    """Run folders ``a`` and ``b`` (one trace each) and the report ``ab.json``; tell on stderr
    how to open the pair in the viewer's compare mode."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, trace in (("a", report.trace_a), ("b", report.trace_b)):
        if trace is not None:
            (folder / name).mkdir(exist_ok=True)
            trace.save(str(folder / name / "trace.json"))
    (folder / "ab.json").write_text(json.dumps(report.to_json(), indent=1), encoding="utf-8")
    if report.trace_b is not None and report.steps:
        click.echo(f"saved A and B to {folder}; view: tpx-inspect serve {folder}, then open "
                   f"#{viewer_link(report)}", err=True)  # fmt: skip


def viewer_link(report: ABReport) -> str:
    """The viewer's deep link that opens B's graph compared with A's, at the first divergence.

    B is the main graph, so its nodes show their overrides; A's graph is the compared one.
    """
    first, steps = report.first, report.steps
    step = next((s for s in steps if first is not None and s.step == first.step), steps[0])
    link = f"run=b&graph={step.graph_b}&compare=a/{step.graph_a}"
    if first is not None and first.node_b is not None:
        link += f"&node={first.node_b}"
    return link
