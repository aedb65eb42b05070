"""The shared part of the ``tpx-inspect`` commands: one-line errors (exit 2), the console,
loading a trace and picking one of its graphs.

>>> pick_graph.__name__
'pick_graph'
"""

from __future__ import annotations

from typing import Any, NoReturn

import click
from rich.console import Console

from tpx_inspect._deps import missing_message, optional_module_of
from tpx_inspect.errors import InspectError
from tpx_inspect.format import load
from tpx_inspect.records import Graph, Trace
from tpx_inspect.script import ScriptError


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


def console() -> Console:
    """The console commands print to (stdout, 140 columns, soft-wrapped)."""
    return Console(file=click.get_text_stream("stdout"), soft_wrap=True, width=140)


def load_trace(path: str) -> Trace:
    """The trace at ``path``: a trace JSON file or a run folder holding ``trace.json``.

    >>> load_trace("no/such/run")
    Traceback (most recent call last):
    ...
    tpx_inspect._cli_base.UsageFail: no trace at no/such/run (expected a trace .json file or a ...
    """
    from tpx_inspect._util import trace_path  # NOTE: not the server's module: no FastAPI import

    p = trace_path(path)
    if not p.exists():
        fail(f"no trace at {path} (expected a trace .json file or a run folder)")
    return load(str(p))


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
    tpx_inspect._cli_base.UsageFail: unknown graph 3: the trace has graphs 0..0
    """
    graphs = trace.graphs
    if not graphs:
        fail("the trace holds no graph")
    if not 0 <= graph < len(graphs):
        fail(f"unknown graph {graph}: the trace has graphs 0..{len(graphs) - 1}")
    return graphs[graph]
