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

from pathlib import Path

import click

import tpx_inspect
from tpx_inspect import _cli_tables as tables
from tpx_inspect._cli_ab import ab as ab_command
from tpx_inspect._cli_base import Cli, UsageFail, console, fail, load_trace, pick_graph
from tpx_inspect._cli_checks import check, gradcheck
from tpx_inspect._cli_checks import only_checks as _only_checks
from tpx_inspect._cli_run import _host_warning, _serve_options, run, serve
from tpx_inspect._deps import missing_message, missing_modules
from tpx_inspect.export.render import INSTALL_HINT, graphviz_available
from tpx_inspect.outputs import EXPORT_FORMATS, export_bytes

__all__ = ["UsageFail", "cli", "fail", "load_trace", "main", "pick_graph"]
__all__ += ["_host_warning", "_only_checks"]  # kept importable from here (tests, old callers)

VERSION = "0.1.0"
EXAMPLE = "\b\nExample:\n  "
EXAMPLES_DIR = Path(tpx_inspect.__file__).parent / "examples"
"""The examples shipped in the wheel (in a checkout, a link to the repository's examples/)."""


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
    out = console()
    out.print(tables.graphs_table(t, limit))
    if graph is not None:
        out.print(tables.nodes_table(graph, graph_id, limit))


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
    tables.print_diff(console(), d, show_all)


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


for command in (run, serve, gradcheck, check, ab_command):
    cli.add_command(command)


def main() -> None:
    """The ``tpx-inspect`` console script."""
    cli(prog_name="tpx-inspect")


if __name__ == "__main__":  # pragma: no cover
    main()
