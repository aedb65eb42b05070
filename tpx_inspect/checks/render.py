"""Rich terminal rendering of a :class:`~tpx_inspect.checks.report.Report`."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

_STYLE = {"pass": "green", "fail": "bold red", "skipped": "yellow", "partial": "yellow"}


def summary_table(report: Any) -> Table:
    """One row per check: status, items checked and skipped, failures, time.

    >>> from tpx_inspect.checks.report import CheckResult, Report
    >>> summary_table(Report((CheckResult("order", 3),))).row_count
    1
    """
    table = Table(title="tpx-inspect checks", title_justify="left")
    for col in ("check", "status", "checked", "skipped", "failures", "seconds"):
        table.add_column(col, justify="right" if col not in ("check", "status") else "left")
    for r in report.results:
        status = f"[{_STYLE[r.status.value]}]{r.status.label}[/]"
        table.add_row(
            r.check, status, str(r.checked), str(r.skipped), str(len(r.errors)),
            f"{r.seconds:.3f}",
        )  # fmt: skip
    return table


def findings_table(result: Any, limit: int = 20) -> Table:
    """The findings of one check: category, node (op, scope, source) and message."""
    table = Table(title=f"{result.check}: findings", title_justify="left", show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("category")
    table.add_column("node")
    table.add_column("message", overflow="fold")
    for i, f in enumerate(result.findings[:limit]):
        style = "red" if f.is_error else "yellow"
        table.add_row(
            str(i + 1), f"[{style}]{f.category}[/{style}]", escape(f.where), escape(f.message)
        )
    if len(result.findings) > limit:
        table.caption = f"{len(result.findings) - limit} more findings in --json output"
    return table


def render_report(report: Any, console: Console | None = None, notes: int = 3) -> None:
    """Print the summary, the findings of every check that has some, and up to ``notes``
    notes per check (skipped nodes and why, kinks)."""
    console = console or Console()
    console.print(summary_table(report))
    for r in report.results:
        if r.findings:
            console.print(findings_table(r))
        if r.status.value in ("skipped", "partial"):
            console.print(f"[yellow]{r.check}: {escape(r.summary())}[/yellow]")
        for note in r.notes[:notes]:
            console.print(f"[dim]{r.check}: {escape(note)}[/dim]")
        if len(r.notes) > notes:
            console.print(f"[dim]{r.check}: {len(r.notes) - notes} more notes in --json[/dim]")
    first = report.first_failure
    if first is not None:
        console.print(
            f"[bold red]first failure:[/bold red] {first.category} at {escape(first.where)}"
        )
    style = _STYLE[report.status.value]
    console.print(f"[{style}]{escape(report.headline())}[/]")
    if report.status.value in ("skipped", "partial") and not report.strict:
        console.print("[dim]exit code 0: nothing failed; --strict makes skipped checks fail[/dim]")
