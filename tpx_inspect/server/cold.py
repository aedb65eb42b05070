"""The cold open: a graph of a trace on disk whose model is not made yet (a fresh server)
answered from what ``tpx-inspect run`` kept beside the trace (``viewmodel.persist``): the
first screen, the states opening one of its big repeats, and search. The trace and the model
are read in the background once the server is quiet (``server.activity``)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from fastapi import Request

from tpx_inspect._json import dumps
from tpx_inspect.server.deps import run_for
from tpx_inspect.server.routers.runs import listed
from tpx_inspect.server.store import graph_of
from tpx_inspect.viewmodel import persist

__all__ = ["WARM_MOST", "WARM_QUIET", "first_kept", "kept", "unmade"]

log = logging.getLogger("tpx_inspect.server")


def first_kept(
    request: Request, run_id: str, graph_id: int, expanded: list[str] | None
) -> tuple[list[str], bool, bytes] | None:
    """The first screen (``expanded`` None), or a state opening one of its big repeats, of a
    graph whose model is not made yet, from the view model kept beside the trace (None when
    there is none, or it is stale): the first frame then costs a digest of the trace's JSON
    and one small read. The trace and the model are read in the background meanwhile."""
    entry = run_for(request, run_id)
    if not unmade(request, run_id, graph_id):
        return None
    if expanded is not None:  # NOTE: the first screen's request started the read-ahead
        exp = sorted(set(expanded) | {"root"})
        blob = persist.opened(entry.path, graph_id, tuple(exp))
        return None if blob is None else (exp, False, blob)
    doc = persist.first_screen(entry.path, graph_id)
    if doc is not None:
        if not entry.loaded:
            args = (request.app, run_id, graph_id)
            threading.Thread(target=_warm, args=args, daemon=True).start()
        exp, every = doc.pop("expanded"), bool(doc.pop("expand_all", False))
        return exp, every, dumps(doc)
    return None


WARM_QUIET, WARM_MOST = 1.0, 10.0
"""Seconds without API requests before the trace of a graph first shown from beside it is
read in the background (see ``server.activity``), and the most it waits for them."""


def _warm(app: Any, run_id: str, graph_id: int) -> None:
    """Read the kept search fields and the run's header (for the run list), then, once the
    server is quiet, a run's trace and the model of one graph (a background thread). A
    request that needs them meanwhile reads them itself."""
    try:
        entry = app.state.store.get(run_id)
        persist.kept(entry.path, graph_id)  # NOTE: first: a search may come before the trace
        listed(entry)  # NOTE: the run list, asked right after the first frame (trace header)
        activity = getattr(app.state, "activity", None)
        if activity is not None:
            activity.wait_quiet(WARM_QUIET, WARM_MOST)
        g = graph_of(entry.trace(), graph_id)
        app.state.vm_models.get((run_id, graph_id, id(g)), g, (entry.path, graph_id))
    except Exception as exc:  # NOTE: the request that needs it will say what is wrong
        log.info("run %s, graph %d not read ahead: %s", run_id, graph_id, exc)


def unmade(request: Request, run_id: str, graph_id: int) -> bool:
    """Is the graph's model not made yet (its trace not read, or read but the model still
    being made), for a trace on disk, which may have answers kept beside it?"""
    entry = run_for(request, run_id)
    if entry.live or entry.path is None:
        return False
    return not request.app.state.vm_models.has(run_id, graph_id)


def kept(request: Request, run_id: str, graph_id: int) -> persist.Kept | None:
    """The tree and search fields kept beside a trace whose model is not made yet (None when
    made, live, or nothing current is kept)."""
    if not unmade(request, run_id, graph_id):
        return None
    return persist.kept(run_for(request, run_id).path, graph_id)
