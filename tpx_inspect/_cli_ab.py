"""``tpx-inspect ab``: a rule or kernel experiment, A (as is) against B (with overrides).

A thin command over :func:`tpx_inspect.ab.run_ab` (a script) and
:func:`tpx_inspect._ab_offline.replay_ab` (a saved trace: only the backward is re-run); the
tables are :mod:`tpx_inspect._ab_tables`'s.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click
from rich.console import Console

from tpx_inspect._ab_compare import Tolerance
from tpx_inspect._ab_tables import print_report
from tpx_inspect._cli_run import COMPRESS
from tpx_inspect.ab import ABError, ABReport, parse_override, run_ab
from tpx_inspect.format import save

__all__ = ["ab", "print_report"]


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
@COMPRESS
@click.pass_context
def ab(ctx: click.Context, target: str, args: tuple[str, ...], rules: tuple[str, ...],
       kernels: tuple[str, ...], backend: str | None, seed: int, steps: str, rtol: float,
       atol: float, values: str, value_limit: int, limit: int, show_all: bool,
       propagate: bool, as_json: bool, out: str | None, compress: bool) -> None:  # fmt: skip
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
        _save(report, Path(out), compress)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
    else:
        console = Console(file=click.get_text_stream("stdout"), soft_wrap=True, width=200)
        print_report(console, report, limit, show_all)
    ctx.exit(report.exit_code)


def _save(report: ABReport, folder: Path, compress: bool = False) -> None:
    """Run folders ``a`` and ``b`` (one trace each, every sidecar member deflated with
    ``compress``) and the report ``ab.json``; tell on stderr how to open the pair in the
    viewer's compare mode."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, trace in (("a", report.trace_a), ("b", report.trace_b)):
        if trace is not None:
            (folder / name).mkdir(exist_ok=True)
            save(trace, str(folder / name / "trace.json"), compress=True if compress else None)
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
