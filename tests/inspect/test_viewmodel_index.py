"""The incremental layout (tpx_inspect.viewmodel._index): the edges, stubs and boxes of an
expansion state read from the tree index agree with a plain reference that walks every graph
edge; the search by field values; the server builds one view model per graph."""

from __future__ import annotations

import gc
import random
import threading
import weakref
from collections import Counter

import numpy as np

import tpx_inspect.server.vm_store as vm_store
from tests.inspect.test_viewmodel import blocks_graph, scalar_mlp_graph
from tpx_inspect.viewmodel import build, layout
from tpx_inspect.viewmodel._index import index_of
from tpx_inspect.viewmodel.wire import box_values, layout_json, search


def reference_edges(vm, expanded) -> tuple[Counter, dict[str, str]]:
    """Every graph edge walked one by one: (frame, source item, target item) -> count, and
    the stubs (stub id -> source box). The plain definition the index must agree with."""
    opened = set(expanded) | {"root"}

    def chain(i: int) -> list[str]:  # the groups above node i, outermost first
        return vm.ancestors(f"n{i}")[::-1]

    def box(i: int) -> str:
        closed = [g for g in chain(i) if g not in opened]
        return closed[0] if closed else f"n{i}"

    edges: Counter = Counter()
    stubs: dict[str, str] = {}
    for d, srcs in enumerate(vm.cols.srcs):
        for s in srcs:
            if s is None or box(s) == box(d):
                continue
            cs, cd = chain(s) + [f"n{s}"], chain(d) + [f"n{d}"]
            k = 0
            while cs[k] == cd[k]:
                k += 1
            frame = cs[k - 1]  # the innermost group holding both
            edges[(frame, cs[k], cd[k])] += 1
            inner = cd[: cd.index(box(d))]
            if cd[k] != box(d):  # the target sits inside an open frame: one stub there
                stub = f"i:{inner[-1]}<{box(s)}"
                stubs[stub] = box(s)
                edges[(inner[-1], stub, box(d))] += 1
    return edges, stubs


def random_states(vm, rng: random.Random, n: int) -> list[set[str]]:
    groups = list(vm.groups)
    states = [set(vm.default_expanded), set(groups)]
    for k in range(n):
        pick = set(rng.sample(groups, min(len(groups), 3 * (k + 1))))
        for g in list(pick):
            pick |= set(vm.ancestors(g))
        states.append(pick)
    return states


def test_index_routes_edges_and_stubs_as_the_plain_walk_does():
    for graph in (blocks_graph(blocks=4), blocks_graph(blocks=3, shared=True), scalar_mlp_graph()):
        vm = build(graph)
        for state in random_states(vm, random.Random(0), 6):
            want, stubs = reference_edges(vm, state)
            lay = layout(vm, state)
            parent = {b.id: b.parent for b in lay.boxes} | {f.id: f.parent for f in lay.frames}
            got = Counter({(parent[e.dst], e.src, e.dst): e.count for e in lay.edges})
            assert got == want, sorted(state)
            assert {b.id: b.link for b in lay.boxes if b.kind == "stub"} == stubs


def test_boxes_of_nodes_are_the_outermost_closed_group():
    vm = build(blocks_graph(blocks=4))
    ix = index_of(vm)
    for state in random_states(vm, random.Random(1), 4):
        shown = ix.shown(state)
        opened = set(state) | {"root"}
        for i, got in enumerate(ix.boxes(shown)):
            closed = [g for g in vm.ancestors(f"n{i}")[::-1] if g not in opened]
            assert got == (closed[0] if closed else f"n{i}")


def test_search_matches_one_field_at_a_time_and_box_values_take_the_largest():
    vm = build(blocks_graph(blocks=3))
    tanh = [i for i, op in enumerate(vm.cols.op) if op == "tanh"]
    assert search(vm, "TANH") == tanh and search(vm, "op:tanh") == tanh
    assert search(vm, "op:tan") == [] and search(vm, "scope:blocks.1.act") != []
    assert set(search(vm, "scope:blocks.1.act")) <= {
        i for i, s in enumerate(vm.cols.scope) if s == "model.blocks.1.act"
    }
    values = np.array([1.0, 5.0, np.nan, -2.0, np.inf])
    assert box_values(np.array([0, 0, 1, 1, 2]), values) == {0: 5.0, 1: -2.0}


def test_the_server_builds_one_view_model_per_graph_for_requests_arriving_together(monkeypatch):
    graph = blocks_graph(blocks=3)
    calls = []

    def counting_build(g):
        calls.append(g)
        return build(g)

    monkeypatch.setattr(vm_store, "build", counting_build)
    models = vm_store.Models()
    got: list = []
    threads = [
        threading.Thread(target=lambda: got.append(models.get(("run", 0, id(graph)), graph)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(vm is got[0] for vm in got)


def reference_json(lay, vp, min_size) -> tuple[set, set, set, set]:
    """What a viewport and a level of detail keep, item by item (the plain definition)."""

    def meets(x, y, w, h):
        return vp is None or (
            x + w / 2 >= vp[0] and x - w / 2 <= vp[0] + vp[2]
            and y + h / 2 >= vp[1] and y - h / 2 <= vp[1] + vp[3]
        )  # fmt: skip

    hidden, frames, aggregates = set(), set(), set()
    for f in lay.frames:
        if f.parent in hidden or max(f.w, f.h) < min_size:
            if f.parent not in hidden and meets(f.x, f.y, f.w, f.h):
                aggregates.add(f.id)
            hidden.add(f.id)
        elif meets(f.x, f.y, f.w, f.h):
            frames.add(f.id)
    inside = {b.id for b in lay.boxes if b.parent in hidden}
    boxes = {b.id for b in lay.boxes if b.id not in inside and meets(b.x, b.y, b.w, b.h)}
    edges = set()
    for e in lay.edges:
        xs, ys = [p[0] for p in e.points], [p[1] for p in e.points]
        ends = {e.src, e.dst}
        box = (
            (min(xs) + max(xs)) / 2,
            (min(ys) + max(ys)) / 2,
            max(xs) - min(xs),
            max(ys) - min(ys),
        )
        if not ends & (inside | hidden) and meets(*box):
            edges.add((e.src, e.dst))
    return boxes, frames, aggregates, edges


def test_viewport_and_level_of_detail_keep_what_the_plain_rule_keeps():
    vm = build(blocks_graph(blocks=5))
    for lay in (layout(vm, vm.groups), layout(vm, ["root"])):  # NOTE: the second has no frame
        w, h = lay.width, lay.height
        sides = sorted(max(f.w, f.h) for f in lay.frames) or [1.0]  # some frames aggregated
        for vp in (None, (0, 0, w, h), (w / 4, h / 3, w / 2, h / 5), (-50, -50, 10, 10)):
            for min_size in (0, sides[len(sides) // 3] + 1, sides[-2:][0] + 1, 1e9):
                doc = layout_json(lay, vp, min_size)
                got = (
                    {b["id"] for b in doc["boxes"]}, {f["id"] for f in doc["frames"]},
                    {a["id"] for a in doc["aggregates"]},
                    {(e["src"], e["dst"]) for e in doc["edges"]},
                )  # fmt: skip
                assert got == reference_json(lay, vp, min_size), (vp, min_size)


def test_a_model_with_its_index_and_layouts_is_freed_without_the_cyclic_collector():
    # NOTE: the server freezes big models out of the collector's reach: a cycle would leak
    vm = build(blocks_graph(blocks=3))
    lay = layout(vm, vm.groups)
    layout_json(lay, (0, 0, 50, 50), 10)
    search(vm, "tanh")
    refs = [weakref.ref(vm), weakref.ref(index_of(vm))]
    was = gc.isenabled()
    gc.disable()
    try:
        del vm, lay
        assert [r() for r in refs] == [None, None]
    finally:
        if was:
            gc.enable()


def test_nothing_is_frozen_out_of_the_collector_in_a_process_serving_a_live_capture():
    from tpx_inspect.server import store

    assert store.may_freeze(store.FREEZE_NODES) == (not store._LIVE.is_set())
    store.RunStore([]).add_live("live", object())
    assert not store.may_freeze(10**9)
