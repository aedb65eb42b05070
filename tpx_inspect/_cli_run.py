"""``tpx-inspect run`` and ``tpx-inspect serve``: record a script's graphs, serve the viewer.

>>> run.name, serve.name
('run', 'serve')
"""

from __future__ import annotations

import sys
import time
import webbrowser
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

import tpx_inspect
from tpx_inspect import _cli_tables as tables
from tpx_inspect._cli_base import console, fail
from tpx_inspect.records import Trace
from tpx_inspect.script import TerminationGuard, check_script, run_captured


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


COMPRESS = click.option(
    "--compress",
    is_flag=True,
    help="Deflate every member of the trace's .npz sidecar: the smallest file (with kept "
    "values about half the default's), a slower save. Default: only the members that deflate "
    "well and fast.",
)
"""``--compress``: ``tpx_inspect.save(..., compress=True)`` for the traces a command saves."""

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


@click.command(context_settings={"ignore_unknown_options": True})
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
@COMPRESS
@click.option("--serve", is_flag=True, help="Serve the viewer on this run while it records.")
@_serve_options
@click.pass_context
def run(ctx: click.Context, script: str, args: tuple[str, ...], out: str | None, policy: str,
        values: str, value_limit: int, threads: str, live_check: bool, compress: bool,
        serve: bool, open_browser: bool, host: str, port: int) -> None:  # fmt: skip
    """Run SCRIPT [ARGS...] as `python SCRIPT ARGS` would, under capture.

    The trace goes to a run folder (default ./tpx-runs/<script>-<time>), also when the script
    fails, is stopped by SIGTERM, SIGHUP or Ctrl-C (the process then ends by that signal), and
    after every kept step (a run killed outright keeps its last completed step). The script's
    exit code is passed through, also when the trace cannot be saved (the reason goes to
    stderr). The view model of a big graph is kept beside the trace (trace.view.npz), so
    that the viewer shows it at once. Options of the script that clash with these go after
    `--`.

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
        saved = _save_run(cap, trace, trace_file, compress)
        tables.print_run_summary(console(), trace, folder / "trace.json", result)
    signum = result.signal or guard.pending
    if server is not None:
        _serve_after_run(server, trace_file if saved else None, signum is None)
    if signum is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        TerminationGuard.exit_by_signal(signum)
    ctx.exit(result.exit_code)


def _save_run(cap: Any, trace: Trace, trace_file: Path, compress: bool) -> bool:
    """Save the run's trace (every sidecar member deflated with ``compress``); on failure
    (disk full, ...) say why on stderr and go on, so that the script's own exit code is
    kept. A checkpoint, if any was written, stays."""
    if cap.checkpoint_error:
        click.echo(f"tpx-inspect: checkpoints stopped: {cap.checkpoint_error}", err=True)
    try:
        cap.save(str(trace_file), trace, compress=True if compress else None)
    except (OSError, ValueError) as exc:
        kept = "" if cap.checkpoint_error else "; the last checkpoint (if any) is kept there"
        click.echo(
            f"tpx-inspect: could not save the trace to {trace_file}: "
            f"{type(exc).__name__}: {exc}{kept}",
            err=True,
        )
        return False
    _keep_view(trace_file, trace)
    return True


def _keep_view(trace_file: Path, trace: Trace) -> None:
    """The view model of the run's big graphs kept beside its trace (``trace.view.npz``), so
    that the first server to open the run shows its first frame without building it (~1 s CPU
    per 100,000 nodes here, once). A failure only logs: the trace stands without it."""
    from tpx_inspect.viewmodel.persist import keep

    keep(trace_file, trace)


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


@click.command()
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
    ids = app.state.store.ids()
    url = url_of(sock)
    if len(ids) == 1:  # NOTE: a link to its first graph: the page asks its first screen at once
        url += f"#run={quote(ids[0], safe='')}&graph=0"
    click.echo(f"serving {url} ({len(ids)} runs); Ctrl-C stops")
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(url)
    serve_forever(app, sock)
