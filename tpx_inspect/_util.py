"""Small helpers shared by capture, the trace format, the CLI and the server."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TRACE_FILE = "trace.json"
"""The trace file of a run folder (its sidecar is ``trace.npz``)."""


def trace_path(path: str | os.PathLike[str]) -> Path:
    """The trace file of ``path``: itself when a file, ``path/trace.json`` for a run folder.

    >>> str(trace_path("tpx-runs/mlp")).endswith("trace.json")
    True
    """
    p = Path(path)
    return p / TRACE_FILE if p.is_dir() or not p.suffix else p


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small containers.

    Records and JSON hold no reference cycles; without this, parsing or building a
    100,000-node graph spends most of its time in collections that find nothing.

    >>> with paused_gc():
    ...     gc.isenabled()
    False
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
