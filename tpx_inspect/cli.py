"""``tpx-inspect``: capture a script's graphs, browse them, check them, export them.

Every command is a thin shell over a library call; only this module prints and exits. Exit
codes: 0 success (checks: all passed), 1 a check failed (or the script's own code for
``run``), 2 bad input (a one-line ``Error: ...``; ``--debug`` shows the traceback).

>>> from click.testing import CliRunner
>>> result = CliRunner().invoke(cli, ["--help"])
>>> result.exit_code, "run" in result.output
(0, True)
"""

from __future__ import annotations

import contextlib
import sys
import time
import webbrowser
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console

import tpx_inspect
from tpx_inspect import _cli_tables as tables
from tpx_inspect._cli_ab import ab as ab_command
from tpx_inspect._deps import missing_message, missing_modules, optional_module_of
from tpx_inspect.errors import InspectError
from tpx_inspect.export.render import INSTALL_HINT, graphviz_available
from tpx_inspect.outputs import EXPORT_FORMATS, export_bytes
from tpx_inspect.records import Graph, Trace
from tpx_inspect.script import ScriptError, TerminationGuard, check_script, run_captured

__all__ = ["cli", "main"]

VERSION = "0.1.0"
EXAMPLE = "\b\nExample:\n  "
EXAMPLES_DIR = Path(tpx_inspect.__file__).parent / "examples"
"""The examples shipped in the wheel (in a checkout, a link to the repository's examples/)."""


class UsageFail(click.ClickException):
    """Bad input: one line on stderr, exit code 2."""

    exit_code = 2


class Cli(click.Group):
    """A group that turns library errors into one-line messages (exit 2) unless ``--debug``."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, UsageFail, SystemExit):
            raise
        except click.UsageError as exc:
            if ctx.params.get("debug"):
                raise
            raise UsageFail(exc.format_message()) from None
        except click.ClickException:
            raise
        except ModuleNotFoundError as exc:
            if ctx.params.get("debug") or optional_module_of(exc) is None:
                raise
            raise UsageFail(missing_message([optional_module_of(exc)])) from None
        except (InspectError, ScriptError, ValueError, KeyError, OSError) as exc:
            if ctx.params.get("debug"):
                raise
            text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            raise UsageFail(text.splitlines()[0] if text else type(exc).__name__) from None


def fail(message: str) -> NoReturn:
    """Stop with a one-line error and exit code 2."""
    raise UsageFail(message)


def _console() -> Console:
    return Console(file=click.get_text_stream("stdout"), soft_wrap=True, width=140)


def load_trace(path: str) -> Trace:
    """The trace at ``path``: a trace JSON file or a run folder holding ``trace.json``.

    >>> load_trace("no/such/run")
    Traceback (most recent call last):
    ...
    tpx_inspect.cli.UsageFail: no trace at no/such/run (expected a trace .json file or a run folder)
    """
    from tpx_inspect._util import trace_path  # NOTE: not the server's module: no FastAPI import

    p = trace_path(path)
    if not p.exists():
        fail(f"no trace at {path} (expected a trace .json file or a run folder)")
    return Trace.load(str(p))


def pick_graph(trace: Trace, graph: int) -> Graph:
    """Graph ``graph`` of ``trace`` (its index over all captures), or a one-line error.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> t = tpx_inspect.trace(lambda: x.exp().sum().backward())
    >>> pick_graph(t, 0).id
    0
    >>> pick_graph(t, 3)
    Traceback (most recent call last):
    ...
    tpx_inspect.cli.UsageFail: unknown graph 3: the trace has graphs 0..0
    """
    graphs = trace.graphs
    if not graphs:
        fail("the trace holds no graph")
    if not 0 <= graph < len(graphs):
        fail(f"unknown graph {graph}: the trace has graphs 0..{len(graphs) - 1}")
    return graphs[graph]


@click.group(cls=Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, "--version", prog_name="tpx-inspect")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """Capture, browse, check and export TPX autograd graphs.

    \b
    Example:
      tpx-inspect run examples/train_mlp.py --quick --serve
      tpx-inspect show tpx-runs/train_mlp-20260101-120000
    """


def _run_folder(out: str | None, name: str) -> Path:
    if out is not None:
        return Path(out)
    base = Path("tpx-runs") / f"{name}-{datetime.now():%Y%m%d-%H%M%S}"
    folder, k = base, 2
    while folder.exists():
        folder, k = Path(f"{base}-{k}"), k + 1
    return folder


def _host_warning(host: str, allowed: Any = ()) -> None:
    from tpx_inspect.server.serve import LOCAL_HOSTS

    if host not in LOCAL_HOSTS:
        names = "any name" if allowed is None else ", ".join(allowed)
        click.echo(
            f"Warning: serving on {host}: anyone who can reach this machine can read these "
            f"traces. Requests must name the server as {names} (the Host header is checked "
            "against DNS rebinding; --allow-host NAME adds a name, e.g. a reverse proxy's). "
            "Use --host 127.0.0.1 to keep them local.",
            err=True,
        )


ALLOW_HOST = click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host header is NAME (a reverse proxy); '*': any.",
)


def _bind(host: str, port: int, allowed: Any = ()) -> Any:
    from tpx_inspect.server.serve import bind

    _host_warning(host, allowed)
    return bind(host, port)


def _allowed(host: str, extra: tuple[str, ...]) -> tuple[str, ...] | None:
    from tpx_inspect.server.guard import hosts_for

    return hosts_for(host, extra)


def _serve_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--open``, ``--host`` and ``--port``: the options of the commands that serve a run."""
    options = (
        click.option("--open", "open_browser", is_flag=True, help="With --serve: open a browser."),
        click.option(
            "--host", default="127.0.0.1", show_default=True, help="With --serve: address."
        ),
        click.option(
            "--port",
            type=click.IntRange(0, 65535),
            default=8000,
            show_default=True,
            help="With --serve: port (0 picks a free one).",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--out", type=click.Path(file_okay=False), help="Run folder to write.")
@click.option(
    "--policy",
    default="first:10,every:100,nonfinite",
    show_default=True,
    help="Steps to keep: all, or a comma list of first:N, every:K, nonfinite.",
)
@click.option(
    "--values",
    type=click.Choice(["none", "small", "all"]),
    default="small",
    show_default=True,
    help="Which full tensor values to keep.",
)
@click.option(
    "--value-limit",
    type=click.IntRange(0),
    default=4096,
    show_default=True,
    help="Largest tensor (elements) kept under --values small.",
)
@click.option(
    "--threads",
    type=click.Choice(["all", "current"]),
    default="all",
    show_default=True,
    help="Record backward passes of every thread, or of the script's main thread only.",
)
@click.option(
    "--check",
    "live_check",
    is_flag=True,
    help="After the run, check every node's rule here, where custom tp.Function classes are "
    "importable, and save the verdicts in the trace (the server shows them).",
)
@click.option("--serve", is_flag=True, help="Serve the viewer on this run while it records.")
@_serve_options
@click.pass_context
def run(ctx: click.Context, script: str, args: tuple[str, ...], out: str | None, policy: str,
        values: str, value_limit: int, threads: str, live_check: bool, serve: bool,
        open_browser: bool, host: str, port: int) -> None:  # fmt: skip
    """Run SCRIPT [ARGS...] as `python SCRIPT ARGS` would, under capture.

    The trace goes to a run folder (default ./tpx-runs/<script>-<time>), also when the script
    fails, is stopped by SIGTERM, SIGHUP or Ctrl-C (the process then ends by that signal), and
    after every kept step (a run killed outright keeps its last completed step). The script's
    exit code is passed through, also when the trace cannot be saved (the reason goes to
    stderr). Options of the script that clash with these go after `--`.

    \b
    Example:
      tpx-inspect run examples/train_mlp.py --quick
      tpx-inspect run train.py --serve --policy first:5,nonfinite -- --epochs 3
    """
    path = check_script(script)
    folder = _run_folder(out, path.stem)
    folder.mkdir(parents=True, exist_ok=True)
    # NOTE: resolved before the script runs: a script that changes directory moves nothing
    trace_file = folder.resolve() / "trace.json"
    cap = tpx_inspect.Capture(
        policy, values=values, value_limit=value_limit, name=path.stem, threads=threads,
        checkpoint=str(trace_file),
    )  # fmt: skip
    server = _start_live(cap, folder.name, host, port, open_browser) if serve else None
    with TerminationGuard() as guard:
        result = run_captured(cap, path, list(args))
        guard.defer()  # a second signal must not cut the save short
        if result.traceback:
            click.echo(result.traceback, err=True, nl=False)  # as `python SCRIPT` would show it
        trace = _annotated(cap.trace, live_check)
        saved = _save_run(cap, trace, trace_file)
        tables.print_run_summary(_console(), trace, folder / "trace.json", result)
    signum = result.signal or guard.pending
    if server is not None:
        _serve_after_run(server, trace_file if saved else None, signum is None)
    if signum is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        TerminationGuard.exit_by_signal(signum)
    ctx.exit(result.exit_code)


def _save_run(cap: Any, trace: Trace, trace_file: Path) -> bool:
    """Save the run's trace; on failure (disk full, ...) say why on stderr and go on, so
    that the script's own exit code is kept. A checkpoint, if any was written, stays."""
    if cap.checkpoint_error:
        click.echo(f"tpx-inspect: checkpoints stopped: {cap.checkpoint_error}", err=True)
    try:
        cap.save(str(trace_file), trace)
        return True
    except (OSError, ValueError) as exc:
        kept = "" if cap.checkpoint_error else "; the last checkpoint (if any) is kept there"
        click.echo(
            f"tpx-inspect: could not save the trace to {trace_file}: "
            f"{type(exc).__name__}: {exc}{kept}",
            err=True,
        )
        return False


def _serve_after_run(server: _Live, trace_file: Path | None, wait: bool) -> None:
    if trace_file is not None:
        server.entry.finish(trace_file)
    if wait:
        click.echo(f"tpx-inspect: serving {server.url}#run={server.entry.id} until Ctrl-C")
        sys.stdout.flush()
        _wait_forever()
    server.thread.stop()


def _annotated(trace: Trace, live_check: bool) -> Trace:
    """``trace`` with its custom Functions' import paths and, with ``--check``, the live local
    check's verdict for every node (the classes are importable only in this process)."""
    from tpx_inspect.checks.functions import annotate_functions, record_live_checks

    annotate_functions(trace)
    if live_check:
        entries = record_live_checks(trace)
        counts: dict[str, int] = {}
        for e in entries:
            for _, status, _ in e["verdicts"]:
                counts[status] = counts.get(status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no nodes"
        click.echo(f"live local check (saved in the trace): {summary}")
    return trace


class _Live:
    def __init__(self, thread: Any, entry: Any) -> None:
        self.thread, self.entry, self.url = thread, entry, thread.url


def _start_live(cap: Any, name: str, host: str, port: int, open_browser: bool) -> _Live:
    from tpx_inspect.server import RunStore, create_app
    from tpx_inspect.server.serve import ServerThread

    allowed = _allowed(host, ())  # NOTE: the Host check of `serve`, for the bound address
    sock = _bind(host, port, allowed)
    store = RunStore([])
    entry = store.add_live(name, cap)
    thread = ServerThread(create_app(store=store, allowed_hosts=allowed), sock).start()
    url = f"{thread.url}#run={entry.id}"
    click.echo(f"tpx-inspect: serving {url} while the script runs")
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(url)
    return _Live(thread, entry)


def _wait_forever() -> None:
    try:
        while True:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass


@cli.command()
@click.argument("run_dirs", nargs=-1, type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port (0 picks a free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open a browser on the viewer.")
@ALLOW_HOST
def serve(run_dirs: tuple[str, ...], host: str, port: int, open_browser: bool,
          allow_hosts: tuple[str, ...]) -> None:  # fmt: skip
    """Serve the viewer and the API on RUN_DIRs (run folders or folders of them).

    \b
    Default: ./tpx-runs. API docs at /docs.
    Example:
      tpx-inspect serve tpx-runs --port 8000
    """
    from tpx_inspect.server import create_app
    from tpx_inspect.server.serve import serve_forever, url_of

    dirs = list(run_dirs) or ["tpx-runs"]
    missing = [d for d in dirs if not Path(d).exists()]
    if missing:
        hint = "; record one first: tpx-inspect run SCRIPT" if not run_dirs else ""
        fail(f"no such run folder: {missing[0]}{hint}")
    allowed = _allowed(host, allow_hosts)
    app = create_app(dirs, allowed_hosts=allowed)
    sock = _bind(host, port, allowed)
    click.echo(f"serving {url_of(sock)} ({len(app.state.store.ids())} runs); Ctrl-C stops")
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(url_of(sock))
    serve_forever(app, sock)


@cli.command()
@click.argument("trace", type=click.Path())
@click.option(
    "--graph",
    "graph_id",
    type=int,
    default=0,
    show_default=True,
    help="Graph whose nodes are listed.",
)
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=200,
    show_default=True,
    help="Most graph rows and node rows shown.",
)
def show(trace: str, graph_id: int, limit: int) -> None:
    """Print the graphs of TRACE, then one graph's nodes in backward order.

    \b
    Example:
      tpx-inspect show tpx-runs/train_mlp-20260101-120000 --graph 3
    """
    t = load_trace(trace)
    graph = pick_graph(t, graph_id) if t.graphs else None
    console = _console()
    console.print(tables.graphs_table(t, limit))
    if graph is not None:
        console.print(tables.nodes_table(graph, graph_id, limit))


@cli.command()
@click.argument("trace", type=click.Path())
@click.option(
    "-f",
    "--format",
    "fmt",
    default=None,
    help=f"One of {', '.join(EXPORT_FORMATS)} (default: from the -o suffix).",
)
@click.option("--graph", "graph_id", type=int, default=0, show_default=True, help="Graph id.")
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False), help="File to write."
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.1),
    default=60.0,
    show_default=True,
    help="Seconds Graphviz may take.",
)
def export(trace: str, fmt: str | None, graph_id: int, output: str, timeout: float) -> None:
    """Write one graph of TRACE to a file: dot, svg, png, pdf, json, model-explorer or html
    (one self-contained page that opens without the server).

    \b
    Example:
      tpx-inspect export tpx-runs/mlp --format svg --graph 0 -o mlp.svg
    """
    fmt = fmt or Path(output).suffix.lstrip(".").lower()
    if fmt not in EXPORT_FORMATS:
        fail(f"unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
    if fmt in ("svg", "png", "pdf", "html") and not graphviz_available():
        fail(f"{fmt} export: {INSTALL_HINT}")
    t = load_trace(trace)
    # NOTE: an HTML page without its picture is an error here, not a page of DOT source
    data, _ = export_bytes(t, pick_graph(t, graph_id), fmt, timeout=timeout, require_picture=True)
    Path(output).write_bytes(data)
    click.echo(f"wrote {output} ({fmt}, {len(data)} bytes)")


@cli.command()
@click.argument("trace_a", type=click.Path())
@click.argument("trace_b", type=click.Path())
@click.option("--graph-a", type=int, default=0, show_default=True, help="Graph of TRACE_A.")
@click.option("--graph-b", type=int, default=0, show_default=True, help="Graph of TRACE_B.")
@click.option("--all", "show_all", is_flag=True, help="List unchanged nodes too.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def diff(trace_a: str, trace_b: str, graph_a: int, graph_b: int, show_all: bool,
         as_json: bool) -> None:  # fmt: skip
    """Compare a graph of TRACE_A with a graph of TRACE_B node by node: structure changes,
    forward-value and gradient differences, saved memory.

    \b
    Example:
      tpx-inspect diff tpx-runs/a tpx-runs/b --graph-a 0 --graph-b 0
    """
    from tpx_inspect.diff import diff_graphs
    from tpx_inspect.server.views import diff_model

    ga = pick_graph(load_trace(trace_a), graph_a)
    gb = pick_graph(load_trace(trace_b), graph_b)
    d = diff_graphs(ga, gb)
    if as_json:
        model = diff_model(f"{trace_a}#{graph_a}", f"{trace_b}#{graph_b}", d, 0, 10**9,
                           not show_all)  # fmt: skip
        click.echo(model.model_dump_json(indent=1))
        return
    tables.print_diff(_console(), d, show_all)


@cli.command()
@click.option("--quick", is_flag=True, help="Train for 2 epochs instead of 20 (seconds).")
@click.option(
    "--serve/--no-serve",
    default=True,
    show_default=True,
    help="Serve the viewer on the run, until Ctrl-C.",
)
@click.option("-o", "--out", type=click.Path(file_okay=False), help="Run folder to write.")
@_serve_options
@click.pass_context
def demo(ctx: click.Context, quick: bool, serve: bool, out: str | None, open_browser: bool,
         host: str, port: int) -> None:  # fmt: skip
    """Train the MLP example shipped with tpx under capture, then serve the viewer on its run:
    `tpx-inspect run <examples>/train_mlp.py --serve` with the installed copy of the example.
    The run folder goes to ./tpx-runs/train_mlp-<time> unless -o is given.

    \b
    Example:
      tpx-inspect demo --quick --port 0
      tpx-inspect demo --quick --no-serve -o demo-run
    """
    script = EXAMPLES_DIR / "train_mlp.py"
    if not script.is_file():
        fail(f"the examples are missing from this install (no {script}); reinstall tpx")
    if missing_modules(["sklearn"]):  # the digits the example trains on
        fail(missing_message(["sklearn"], "tpx-inspect demo"))
    click.echo(f"tpx-inspect demo: training {script}{' --quick' if quick else ''} under capture")
    ctx.invoke(run, script=str(script), args=("--quick",) if quick else (), out=out,
               serve=serve, open_browser=open_browser, host=host, port=port)  # fmt: skip


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
        report.render(_console())
    ctx.exit(report.exit_code)


def _quiet_stdout(as_json: bool) -> Any:
    """With --json, the target's own prints (also at import time) go to stderr, so that
    stdout is the report alone."""
    return contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()


STRICT_HELP = "Exit 1 when a check was SKIPPED or PARTIAL too (default: only on FAIL)."


@cli.command()
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


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--strict", is_flag=True, help=STRICT_HELP)
@click.option("--only", metavar="CHECKS", help="Comma-separated checks to run (default: all of "
              "local,accumulation,kernel,order,nonfinite).")  # fmt: skip
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
    from tpx_inspect.checks import compiled, run_script_checks

    path = check_script(script)
    checks = _only_checks(only)
    progress = CheckProgress(tty=False if as_json else None)
    replaying = compiled.replaying()  # tpx.compile calls: plan vs eager, bitwise
    with _quiet_stdout(as_json), _dask_client(workers, scheduler) as client, progress as p, \
            replaying as replays:  # fmt: skip
        report = run_script_checks(str(path), list(args), checks, progress=p.check,
                                   node_progress=p.nodes, client=client)  # fmt: skip
    _finish_report(ctx, compiled.add_to(report, replays), as_json, strict)


def _only_checks(only: str | None) -> tuple[str, ...]:
    from tpx_inspect.checks import GRAPH_CHECKS

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


cli.add_command(ab_command)


def main() -> None:
    """The ``tpx-inspect`` console script."""
    cli(prog_name="tpx-inspect")


if __name__ == "__main__":  # pragma: no cover
    main()
