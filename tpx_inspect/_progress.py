"""Progress of long checks on stderr: a bar with node counts and an ETA on a terminal, a
one-line log every few seconds otherwise (CI logs, pipes)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class CheckProgress:
    """Callbacks for ``run_graph_checks(progress=..., node_progress=...)`` that report on
    ``stream``; use as a context manager.

    >>> import io
    >>> out = io.StringIO()
    >>> with CheckProgress(out, every=0.0, tty=False) as p:  # a line at most every 0 s
    ...     p.check("local", 0, 2)
    ...     p.nodes("local", 50, 100)
    >>> out.getvalue().startswith("check local: 50/100 nodes (50%)")
    True
    """

    def __init__(self, stream: TextIO | None = None, every: float = 5.0,
                 tty: bool | None = None) -> None:  # fmt: skip
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.tty = self.stream.isatty() if tty is None else tty
        self.bar: Any = None
        self.task: Any = None
        self.started = self.logged = time.monotonic()

    def __enter__(self) -> CheckProgress:
        if self.tty:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                MofNCompleteColumn(), TimeRemainingColumn(),
                                console=Console(file=self.stream), transient=True)  # fmt: skip
            self.bar.__enter__()
            self.task = self.bar.add_task("checks", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def check(self, name: str, index: int, total: int) -> None:
        """A check starts (``index`` of ``total`` checks)."""
        self.started = time.monotonic()
        if self.bar is not None:
            self.bar.reset(self.task, description=f"check {name}", total=None)

    def nodes(self, name: str, done: int, total: int) -> None:
        """``done`` of ``total`` nodes of check ``name`` are done."""
        if self.bar is not None:
            self.bar.update(self.task, description=f"check {name} (nodes)", completed=done,
                            total=total)  # fmt: skip
            return
        now = time.monotonic()
        if now - self.logged < self.every:
            return
        self.logged = now
        elapsed = now - self.started
        eta = elapsed / done * (total - done) if done else float("nan")
        print(f"check {name}: {done}/{total} nodes ({100 * done // max(total, 1)}%), "
              f"{elapsed:.0f} s, ETA {eta:.0f} s", file=self.stream, flush=True)  # fmt: skip
