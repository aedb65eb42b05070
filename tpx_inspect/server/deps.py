"""Shared request dependencies: the app's settings and store, validated path parameters.

Ids are validated by pattern (422 when malformed) and looked up in the store (404 when
unknown); they are never joined into a filesystem path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Path, Query, Request

from tpx_inspect.records import Graph, Trace
from tpx_inspect.server.store import RunEntry, RunStore, graph_of

__all__ = [
    "GraphId",
    "LayoutCache",
    "Limit",
    "NodeId",
    "Offset",
    "RunId",
    "Settings",
    "graph_for",
    "run_for",
    "settings_of",
    "store_of",
]

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"

RunId = Annotated[str, Path(pattern=RUN_ID_PATTERN, description="a run id from /api/runs")]
GraphId = Annotated[int, Path(ge=0, le=10**9, description="a graph id from the run's graphs")]
NodeId = Annotated[int, Path(ge=0, le=10**9, description="a node id of the graph")]
Offset = Annotated[int, Query(ge=0, le=10**9, description="first item of the page")]
Limit = Annotated[int, Query(ge=1, le=1000, description="items per page (at most 1000)")]


@dataclass(frozen=True)
class Settings:
    """Server settings: the ``dot`` binary for picture exports (None: none), the timeout of a
    layout in seconds, the size of the layout cache, and how many heavy jobs run at once.

    >>> Settings().layout_timeout
    1.5
    """

    dot: str | None = "dot"
    layout_timeout: float = 1.5
    cache_size: int = 64
    job_workers: int = 2  # checks, diffs and exports running at once (background jobs)


class LayoutCache:
    """A small thread-safe LRU of arranged expansion states, keyed by run, graph, the loaded
    graph and the state.

    >>> c = LayoutCache(2)
    >>> c.put("a", 1); c.put("b", 2); c.put("c", 3)
    >>> c.get("a"), c.get("c")
    (None, 3)
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> object | None:
        """The cached value of ``key`` (refreshing its place) or None."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Hashable, value: object) -> None:
        """Store ``value``; the least recently used entry goes when the cache is full."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


def store_of(request: Request) -> RunStore:
    """The app's :class:`RunStore`."""
    return request.app.state.store


def settings_of(request: Request) -> Settings:
    """The app's :class:`Settings`."""
    return request.app.state.settings


def cache_of(request: Request) -> LayoutCache:
    """The app's view cache."""
    return request.app.state.cache


def run_for(request: Request, run_id: str) -> RunEntry:
    """The run ``run_id`` (rescanning the folders once when it is not known yet)."""
    store = store_of(request)
    if run_id not in store.ids():
        store.rescan()
    return store.get(run_id)


def graph_for(request: Request, run_id: str, graph_id: int) -> tuple[RunEntry, Trace, Graph]:
    """Run, trace and graph for a request; raises ``UnknownId`` (404) when absent."""
    entry = run_for(request, run_id)
    trace = entry.trace()
    return entry, trace, graph_of(trace, graph_id)
