"""The runs a server knows: run folders on disk (reloaded when their trace changes) and live
captures (``run --serve``), addressed by validated ids that are never used as paths.

A run folder holds ``trace.json`` and its ``trace.npz`` sidecar. A folder given to the store
is either a run folder or a folder of run folders (``./tpx-runs``), rescanned on request so
that runs written later appear.

>>> store = RunStore([])
>>> store.ids()
[]
>>> valid_id("../etc"), valid_id("mlp-2026_01.3")
(False, True)
"""

from __future__ import annotations

import gc
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpx_inspect._util import TRACE_FILE, trace_path
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.format import load
from tpx_inspect.records import Graph, Trace

__all__ = ["TRACE_FILE", "RunEntry", "RunStore", "UnknownId", "trace_path", "valid_id"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class UnknownId(KeyError):
    """An id (run, graph, node, scope) that the server does not know: answered with a 404."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown id"


def valid_id(text: str) -> bool:
    """True for ids made of letters, digits, ``.``, ``_`` and ``-`` (no path separators)."""
    return bool(_ID.fullmatch(text)) and ".." not in text


@dataclass
class RunEntry:
    """One run: a trace file on disk, or a live capture (then ``capture.trace`` is read)."""

    id: str
    path: Path | None = None
    capture: Any = None
    root: Path | None = None  # the served folder it was found in (None: given itself)
    _cache: tuple[Any, Trace | None, str | None] = field(default=(None, None, None), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def live(self) -> bool:
        """True while the run is fed by a capture in this process."""
        return self.capture is not None

    @property
    def loaded(self) -> bool:
        """True once the trace was read (it may have changed on disk since)."""
        return self.capture is not None or self._cache[1] is not None

    def trace(self) -> Trace:
        """The run's trace now; raises :class:`TraceFormatError` when the file is unreadable."""
        if self.capture is not None:
            return self.capture.trace
        assert self.path is not None
        with self._lock:
            stamp = _stamp(self.path)
            cached_stamp, trace, error = self._cache
            if stamp != cached_stamp:
                trace, error = _load(self.path, self.root)
                self._cache = (stamp, trace, error)
        if trace is None:
            raise TraceFormatError(error or f"{self.path}: unreadable trace")
        return trace

    def finish(self, path: Path) -> None:
        """The live capture ended and was saved to ``path``: read it from disk from now on."""
        self.path = path
        self.capture = None


def _stamp(path: Path) -> Any:
    try:
        st = path.stat()
    except OSError:
        return None
    try:  # NOTE: a self-contained trace (arrays inline) has no sidecar
        side = path.with_suffix(".npz").stat()
    except OSError:
        return (st.st_mtime_ns, st.st_size)
    return (st.st_mtime_ns, st.st_size, side.st_mtime_ns, side.st_size)


def inside(path: Path, root: Path) -> bool:
    """True when ``path`` resolves (links followed) to ``root`` or below it."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, top]) == top


FREEZE_NODES = 20_000
"""Traces with this many nodes are moved out of the cyclic collector's reach once read."""

_LIVE = threading.Event()  # NOTE: set once a live capture is served by this process


def may_freeze(nodes: int) -> bool:
    """Whether what was just made for a graph of ``nodes`` nodes may be frozen out of the
    cyclic collector (``gc.freeze`` freezes every object of the process): only for big graphs,
    and never in a process that also runs the user's script (``run --serve``), whose pending
    garbage would be frozen with them.

    >>> may_freeze(10)
    False
    """
    return nodes >= FREEZE_NODES and not _LIVE.is_set()


def _load(path: Path, root: Path | None = None) -> tuple[Trace | None, str | None]:
    if root is not None and not inside(path, root):
        return None, f"{path}: refused: it resolves outside the served folder {root}"
    was = gc.isenabled()
    gc.disable()  # NOTE: re-enabled below, after a big trace is frozen (see _read)
    try:
        return _read(path)
    finally:
        if was:
            gc.enable()


def _read(path: Path) -> tuple[Trace | None, str | None]:
    """Read the trace; a big one is then frozen out of the cyclic collector's reach
    (``gc.freeze``, O(1)): it holds no cycles, and the collection that would otherwise run
    over its million objects right after the read costs most of a second."""
    try:
        trace = load(str(path))
        if may_freeze(sum(len(g.nodes) for g in trace.graphs)):
            gc.freeze()
        return trace, None
    except TraceFormatError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    except Exception as exc:  # NOTE: one run's bug must not break the others' listing
        return None, f"{path}: unreadable ({type(exc).__name__})"


class RunStore:
    """The runs of a server, by id. Thread-safe: a live run is fed while requests read it."""

    def __init__(self, paths: list[str | os.PathLike[str]] | tuple = ()) -> None:
        self.roots = [Path(p) for p in paths]
        self._runs: dict[str, RunEntry] = {}
        self._lock = threading.Lock()
        self.rescan()

    def ids(self) -> list[str]:
        """Every run id, in the order the runs were found."""
        with self._lock:
            return list(self._runs)

    def get(self, run_id: str) -> RunEntry:
        """The run ``run_id``; raises :class:`UnknownId` when there is none."""
        with self._lock:
            entry = self._runs.get(run_id) if valid_id(run_id) else None
        if entry is None:
            raise UnknownId(f"unknown run {run_id!r}")
        return entry

    def add_live(self, name: str, capture: Any) -> RunEntry:
        """Register a live capture under an id made from ``name``."""
        _LIVE.set()
        with self._lock:
            entry = RunEntry(self._free_id(name), capture=capture)
            self._runs[entry.id] = entry
        return entry

    def rescan(self) -> None:
        """Pick up run folders written since the last scan."""
        known = {e.path.resolve() for e in self._runs.values() if e.path is not None}
        for path, root in self._trace_files():
            if path.resolve() in known:
                continue
            name = path.parent.name if path.name == TRACE_FILE else path.stem
            with self._lock:
                rid = self._free_id(name)
                self._runs[rid] = RunEntry(rid, path=path, root=root)

    def _trace_files(self) -> list[tuple[Path, Path | None]]:
        """Trace files with the served folder they must resolve into (None: given itself)."""
        found: list[tuple[Path, Path | None]] = []
        for root in self.roots:
            if root.is_file():
                found.append((root, None))
            elif (root / TRACE_FILE).is_file():
                found.append((root / TRACE_FILE, root))
            elif root.is_dir():
                found += sorted(
                    (p / TRACE_FILE, root) for p in root.iterdir() if (p / TRACE_FILE).is_file()
                )
        return found

    def _free_id(self, name: str) -> str:
        base = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("._-")[:100] or "run"
        base = base.replace("..", "_")
        rid, k = base, 2
        while rid in self._runs:
            rid, k = f"{base}-{k}", k + 1
        return rid


def graph_of(trace: Trace, graph_id: int) -> Graph:
    """Graph ``graph_id`` (its index over every capture of the trace) or :class:`UnknownId`."""
    graphs = trace.graphs
    if not 0 <= graph_id < len(graphs):
        raise UnknownId(f"unknown graph {graph_id} ({len(graphs)} graphs)")
    return graphs[graph_id]
