"""Rich tables of the CLI: graphs, nodes in backward order, a run's summary, a diff.

>>> import tpx as tp, tpx_inspect
>>> x = tp.ones(3, requires_grad=True)
>>> t = tpx_inspect.trace(lambda: (x * 2).sum().backward())
>>> graphs_table(t).row_count, nodes_table(t.graphs[0], 0).row_count
(1, 3)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from tpx_inspect._util import paused_gc
from tpx_inspect.diff import GraphDiff
from tpx_inspect.records import SUMMARY_COLUMNS, Graph, Trace

_NAN, _INF = SUMMARY_COLUMNS.index("nan"), SUMMARY_COLUMNS.index("inf")

__all__ = ["graphs_table", "nodes_table", "print_diff", "print_run_summary"]


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def _ms(x: float | None) -> str:
    return "" if x is None else f"{x * 1e3:.3f}"


def _opt(i: int | None) -> str:
    return "" if i is None else str(i)


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def _nonfinite(g: Graph) -> int:
    """Nodes whose output or gradient holds NaN/Inf, read from the summary table at once."""
    t = g.tables
    if not len(t.summaries):
        return 0
    bad_row = (t.summaries[:, [_NAN, _INF]] > 0).any(axis=1)
    rows = t.nodes[:, :2].astype(np.int64)  # output and gradient summary rows, -1 for none
    return int((bad_row[np.maximum(rows, 0)] & (rows >= 0)).any(axis=1).sum())


def graphs_table(trace: Trace, limit: int = 200) -> Table:
    """One row per graph: id, capture, step, kind, nodes, non-finite nodes, memory, time
    (the first ``limit`` graphs; a trace may hold 100,000)."""
    graphs = trace.graphs
    table = Table(title=f"graphs ({len(graphs)})")
    for col in ("graph", "capture", "step", "kind", "detail", "nodes", "non-finite",
                "peak saved", "backward ms"):  # fmt: skip
        table.add_column(col, justify="right" if col not in ("kind", "detail") else "left")
    if len(graphs) > limit:
        table.caption = f"{len(graphs)} graphs, the first {limit} shown: raise --limit"
    for i, g in enumerate(graphs[:limit]):
        bad = _nonfinite(g)
        table.add_row(
            str(i), str(g.run), str(g.step), g.kind, g.detail, str(len(g.nodes)),
            f"[red]{bad}[/red]" if bad else "0", _bytes(g.peak_saved_bytes),
            _ms(g.backward_seconds),
        )  # fmt: skip
    return table


def _first_rows(order: tuple[int, ...], total: int, limit: int) -> list[int]:
    """The first ``limit`` node ids: backward order, then the nodes backward did not run
    (linear: a set rebuilt per node made ``show`` quadratic)."""
    ids = list(order[:limit])
    if len(ids) < limit:
        ran = set(order)
        ids += [i for i in range(total) if i not in ran][: limit - len(ids)]
    return ids


def nodes_table(graph: Graph, graph_id: int, limit: int = 200) -> Table:
    """The nodes of ``graph`` in backward order (then those backward did not run)."""
    total = len(graph.nodes)
    with paused_gc():  # NOTE: 100,000 order entries: no cycles, nothing for the collector
        ids = _first_rows(graph.order, total, limit)
    table = Table(title=f"graph {graph_id}: nodes in backward order ({total})")
    for col in ("order", "id", "op", "kind", "scope", "shape", "dtype", "grad norm",
                "fwd ms", "bwd ms", "saved"):  # fmt: skip
        table.add_column(
            col, justify="left" if col in ("op", "kind", "scope", "dtype") else "right"
        )
    for i in ids[:limit]:
        n, st = graph.nodes[i], graph.stats[i]
        norm = None if st.grad is None else st.grad.norm
        bad = (st.output is not None and not st.output.finite) or (
            st.grad is not None and not st.grad.finite
        )
        table.add_row(
            "" if st.order is None else str(st.order), str(i),
            f"[red]{n.title}[/red]" if bad else n.title, n.kind, n.scope, _shape(n.shape),
            n.dtype, _num(norm), _ms(st.forward_seconds), _ms(st.backward_seconds),
            _bytes(n.saved_bytes) if n.saved_bytes else "",
        )  # fmt: skip
    if total > limit:
        table.caption = f"{total - limit} more rows: raise --limit"
    return table


def print_run_summary(console: Console, trace: Trace, path: Path, result: Any) -> None:
    """What ``tpx-inspect run`` prints after the script: graphs, nodes, non-finite values."""
    graphs = trace.graphs
    nodes = sum(len(g.nodes) for g in graphs)
    bad = [(i, _nonfinite(g)) for i, g in enumerate(graphs)]
    bad = [(i, k) for i, k in bad if k]
    steps = sum(r.steps for r in trace.runs)
    console.print(f"trace: {path}")
    console.print(f"graphs: {len(graphs)} kept of {steps} backward steps, nodes: {nodes}")
    if bad:
        first = ", ".join(f"graph {i} ({k} nodes)" for i, k in bad[:5])
        console.print(f"[red]non-finite values found[/red] in {len(bad)} graphs: {first}")
    else:
        console.print("non-finite values: none")
    if not result.ok:
        console.print(
            f"[red]script exited with code {result.exit_code}[/red]: {result.error or ''}"
        )


def print_diff(console: Console, d: GraphDiff, show_all: bool) -> None:
    """A summary line and a table of the nodes that differ (all with ``show_all``)."""
    console.print(
        f"nodes {d.nodes_a} -> {d.nodes_b}; same structure: {d.same_structure}; "
        f"added {d.count('added')}, removed {d.count('removed')}, "
        f"structure changed {d.count('structure')}, values changed {d.count('values')}; "
        f"max output diff {_num(d.max_diff('output'))}, max grad diff {_num(d.max_diff('grad'))}; "
        f"peak saved {_bytes(d.peak_saved_bytes_a)} -> {_bytes(d.peak_saved_bytes_b)}"
    )
    table = Table(title="node differences")
    for col in (
        "id A",
        "id B",
        "status",
        "output diff",
        "grad diff",
        "saved A",
        "saved B",
        "changes",
    ):
        table.add_column(col)
    for n in d.nodes:
        if show_all or n.changed:
            table.add_row(
                _opt(n.id), _opt(n.id_b), n.status, _num(n.output_diff), _num(n.grad_diff),
                str(n.saved_bytes_a), str(n.saved_bytes_b), "; ".join(n.changes),
            )  # fmt: skip
    console.print(table)
