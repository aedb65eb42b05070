"""What the view-model endpoints keep between requests: the view model of each loaded graph
(built once, or read from beside its trace), the states arranged ahead of the first clicks,
encoded answers, and short keys for expansion states."""

from __future__ import annotations

import gc
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tpx_inspect._json import dumps
from tpx_inspect.records import Graph
from tpx_inspect.server.store import UnknownId, may_freeze
from tpx_inspect.viewmodel import ViewModel, build, persist, wire
from tpx_inspect.viewmodel._index import index_of
from tpx_inspect.viewmodel.layout import Arranged, prepare

__all__ = ["KEEP_BYTES", "PREPARE_WAIT", "Models", "States", "collector_quiet", "whole"]


class Models:
    """View models of the loaded graphs, built once per graph (a lock per graph: requests
    arriving together wait for one build instead of each making its own), kept apart from
    the layout cache so that many layouts never push a model out."""

    def __init__(self, size: int = 8) -> None:
        self.items: OrderedDict[tuple, tuple[ViewModel, Graph]] = OrderedDict()
        self.building: dict[tuple, threading.Lock] = {}
        self.size = size
        self.lock = threading.Lock()

    def has(self, run_id: str, graph_id: int) -> bool:
        """Is a model of graph ``graph_id`` of run ``run_id`` made (of any read of its trace)?"""
        with self.lock:
            return any(k[:2] == (run_id, graph_id) for k in self.items)

    def get(self, key: tuple, g: Graph, kept: tuple[Any, int] | None = None) -> ViewModel:
        """The model of graph ``g``; ``kept`` = (trace path, graph index) of a graph read
        from disk, whose model may be kept beside the trace (see ``viewmodel.persist``)."""
        with self.lock:
            hit = self.items.get(key)
            if hit is not None:
                self.items.move_to_end(key)
                return hit[0]
            gate = self.building.setdefault(key, threading.Lock())
        made = None
        with gate:
            with self.lock:
                hit = self.items.get(key)
            if hit is None:
                made = _build(g, kept)
                hit = (made[0], g)  # NOTE: the entry holds g, so id(g) in the key stays its
                with self.lock:
                    self.items[key] = hit
                    self.building.pop(key, None)
                    while len(self.items) > self.size:
                        self.items.popitem(last=False)
        if made is not None:  # NOTE: after the gate: requests waiting for the model go on
            _ready(made[0], g, kept if made[1] else None)
        return hit[0]


def _build(g: Graph, kept: tuple[Any, int] | None = None) -> tuple[ViewModel, bool]:
    """A view model (read from beside the trace when one is kept and current, else built)
    and its tree index, then moved (with the trace) out of the cyclic collector's reach:
    they hold no cycles, and a full collection over a 100,000-node model's objects costs
    most of a second each time one runs. Also says whether it was built."""
    keep = kept is not None and len(g.nodes) >= persist.MIN_NODES
    with collector_quiet(len(g.nodes)):
        vm = persist.read(kept[0], kept[1], g) if keep else None  # type: ignore[index]
        fresh = vm is None
        if vm is None:
            vm = build(g)
        index_of(vm)
    return vm, fresh and keep


PREPARE_WAIT = 30.0
"""Seconds a layout request waits for the states being arranged ahead (a fraction of a
second of CPU at 100k) rather than making the same state again beside them."""


def _ready(vm: ViewModel, g: Graph, keep: tuple[Any, int] | None) -> None:
    """The first screen and the states opening its big repeats arranged and encoded ahead
    (see :func:`~tpx_inspect.viewmodel.layout.prepare`); a model just built for a big graph
    read from disk kept beside its trace (``keep``) for the next server."""
    done = vm.memo.setdefault("preparing", threading.Event())
    try:
        with collector_quiet(len(g.nodes)):
            for arr in prepare(vm).values():
                whole(arr, len(g.nodes))
    finally:
        done.set()
    if keep is not None:
        persist.write(keep[0], {keep[1]: vm})


@contextmanager
def collector_quiet(nodes: int) -> Iterator[None]:
    """The cyclic collector off while a model or layout is made; what a big graph's made
    then moves out of its reach when allowed (see ``store.may_freeze``): it holds no cycles,
    and a full collection over a 100k model's objects costs most of a second each time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
        if may_freeze(nodes):
            gc.freeze()
    finally:
        if was:
            gc.enable()


class States:
    """Short keys for expansion states, so that a link or a later request names one."""

    def __init__(self, size: int = 4096) -> None:
        self.items: OrderedDict[str, tuple] = OrderedDict()
        self.size = size
        self.lock = threading.Lock()

    def put(self, run_id: str, graph_id: int, expanded: tuple[str, ...]) -> str:
        text = "\x1f".join((run_id, str(graph_id), *expanded))
        key = "k" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()
        with self.lock:
            self.items[key] = (run_id, graph_id, expanded)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return key

    def get(self, key: str, run_id: str, graph_id: int) -> tuple[str, ...]:
        with self.lock:
            hit = self.items.get(key)
        if hit is None or hit[:2] != (run_id, graph_id):
            raise UnknownId(f"no view state {key!r} for graph {graph_id} of run {run_id!r}")
        return hit[2]


KEEP_BYTES = 4 << 20
"""Whole layout answers up to this size are kept encoded with their state."""


def whole(arr: Arranged, nodes: int) -> bytes:
    """The whole layout of a state as JSON (kept with the state when not too big: a state
    asked again, by key or by name, is then answered without composing or encoding)."""
    hit = arr.memo.get("whole")
    if hit is None:
        with collector_quiet(nodes):
            hit = dumps(wire.layout_json(arr.layout()))
        if len(hit) <= KEEP_BYTES:
            arr.memo["whole"] = hit
    return hit
