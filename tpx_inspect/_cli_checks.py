"""``tpx-inspect gradcheck`` and ``tpx-inspect check``: the checks from the terminal.

The ``--only`` choices are the check registry's graph checks.

>>> only_checks("local,order")
('local', 'order')
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from tpx_inspect._cli_base import console, load_trace
from tpx_inspect.checks.registry import check_names
from tpx_inspect.script import check_script


def _progress_report(run_checks: Any, as_json: bool) -> Any:
    from rich.progress import Progress

    if as_json:
        return run_checks(None)
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("checks", total=None)

        def progress(name: str, k: int, total: int) -> None:
            bar.update(task, description=f"check {name}", completed=k, total=total)

        return run_checks(progress)


def _finish_report(ctx: click.Context, report: Any, as_json: bool, strict: bool = False) -> None:
    import dataclasses

    report = dataclasses.replace(report, strict=strict)
    if as_json:
        click.echo(report.to_json())
    else:
        report.render(console())
    ctx.exit(report.exit_code)


def _quiet_stdout(as_json: bool) -> Any:
    """With --json, the target's own prints (also at import time) go to stderr, so that
    stdout is the report alone."""
    return contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()


STRICT_HELP = "Exit 1 when a check was SKIPPED or PARTIAL too (default: only on FAIL)."


@click.command()
@click.argument("target")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the inputs.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--strict", is_flag=True, help=STRICT_HELP)
@click.option(
    "--trust-code",
    is_flag=True,
    help="For a saved trace: import the custom tp.Function classes it names (runs their "
    "modules' code) to check those nodes too.",
)
@click.pass_context
def gradcheck(ctx: click.Context, target: str, seed: int, as_json: bool, strict: bool,
              trust_code: bool) -> None:  # fmt: skip
    """Check the gradients of TARGET: file.py::function, package.module:function, or a saved
    trace (.json / run folder, checked from its saved values). Inputs come from a companion
    `<function>_inputs([generator])`. Each check says PASS, FAIL, SKIPPED or PARTIAL (with
    reasons). Exit 0: nothing failed, 1: a check failed (with --strict: or was skipped).

    \b
    Example:
      tpx-inspect gradcheck examples/custom_rule.py::loss --json
    """
    from tpx_inspect.checks import load_target, run_all_checks, run_trace_checks

    with _quiet_stdout(as_json):
        if ("::" not in target and ":" not in target) or Path(target).exists():
            t = load_trace(target)
            report = _progress_report(lambda p: run_trace_checks(t, trust_code=trust_code), as_json)
        else:
            fn, inputs = load_target(target, seed=seed)
            report = _progress_report(
                lambda p: run_all_checks(fn, inputs, seed=seed, progress=p), as_json
            )
    _finish_report(ctx, report, as_json, strict)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--strict", is_flag=True, help=STRICT_HELP)
@click.option("--only", metavar="CHECKS", help="Comma-separated checks to run (default: all of "
              f"{','.join(check_names('graph'))}).")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), help="Run the local check on a Dask "
              "LocalCluster of N processes on 127.0.0.1.")  # fmt: skip
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="Run the local check on the "
              "existing Dask cluster at this scheduler address.")  # fmt: skip
@click.pass_context
def check(ctx: click.Context, script: str, args: tuple[str, ...], as_json: bool,
          strict: bool, only: str | None, workers: int | None,
          scheduler: str | None) -> None:  # fmt: skip
    """Run SCRIPT [ARGS...] under capture and every graph check on what it recorded.
    Each check says PASS, FAIL, SKIPPED or PARTIAL (with reasons). Exit 0: nothing failed,
    1: a check failed or the script failed (with --strict: or a check was skipped).
    Progress (nodes done, ETA) goes to stderr: a bar on a terminal, a line every few seconds
    otherwise.

    \b
    Example:
      tpx-inspect check examples/train_mlp.py --json --only local,order -- --quick
    """
    from tpx_inspect._progress import CheckProgress
    from tpx_inspect.checks import run_script_checks

    path = check_script(script)
    checks = only_checks(only)
    progress = CheckProgress(tty=False if as_json else None)
    with _quiet_stdout(as_json), _dask_client(workers, scheduler) as client, progress as p:
        report = run_script_checks(str(path), list(args), checks, progress=p.check,
                                   node_progress=p.nodes, client=client)  # fmt: skip
    _finish_report(ctx, report, as_json, strict)


def only_checks(only: str | None) -> tuple[str, ...]:
    """The graph checks ``--only`` names (all of them for None), or a usage error."""
    GRAPH_CHECKS = check_names("graph")
    if only is None:
        return GRAPH_CHECKS
    names = tuple(n.strip() for n in only.split(",") if n.strip())
    unknown = [n for n in names if n not in GRAPH_CHECKS]
    if unknown or not names:
        raise click.BadParameter(f"unknown check(s) {unknown}; choose from "
                                 f"{','.join(GRAPH_CHECKS)}", param_hint="--only")  # fmt: skip
    return names


@contextlib.contextmanager
def _dask_client(workers: int | None, scheduler: str | None) -> Any:
    if workers and scheduler:
        raise click.UsageError("give --workers or --scheduler, not both")
    if not workers and not scheduler:
        yield None
        return
    try:
        from tpx_inspect.checks.cluster import connect

        cm = connect(workers, scheduler)
        client = cm.__enter__()
    except ImportError as e:  # MissingDependencyError: names the pip command
        raise click.ClickException(str(e)) from e
    except OSError as e:
        raise click.ClickException(f"cannot reach the Dask scheduler {scheduler}: {e}") from e
    try:
        yield client
    finally:
        cm.__exit__(None, None, None)
