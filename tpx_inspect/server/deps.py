"""Shared request dependencies: the app's settings and store, validated path parameters.

Ids are validated by pattern (422 when malformed) and looked up in the store (404 when
unknown); they are never joined into a filesystem path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Path, Query, Request

from tpx_inspect.records import Graph, Trace
from tpx_inspect.server.graphview import LayoutCache
from tpx_inspect.server.store import RunEntry, RunStore, graph_of

__all__ = [
    "GraphId",
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
    """Server settings: the ``dot`` binary (None: fallback layout only), its timeout in
    seconds, the size of the view cache, and how many heavy jobs run at once.

    >>> Settings().layout_timeout
    1.5
    """

    dot: str | None = "dot"
    layout_timeout: float = 1.5
    cache_size: int = 64
    job_workers: int = 2  # checks, diffs and exports running at once (background jobs)


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
