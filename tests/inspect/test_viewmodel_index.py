"""The incremental layout (tpx_inspect.viewmodel._index): the edges, stubs and boxes of an
expansion state read from the tree index agree with a plain reference that walks every graph
edge; the search by field values; the server builds one view model per graph."""

from __future__ import annotations

import random
import threading
from collections import Counter

import numpy as np

import tpx_inspect.server.routers.viewmodel as vm_router
from tests.inspect.test_viewmodel import blocks_graph, scalar_mlp_graph
from tpx_inspect.viewmodel import build, layout
from tpx_inspect.viewmodel._index import index_of
from tpx_inspect.viewmodel.wire import box_values, search


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

    monkeypatch.setattr(vm_router, "build", counting_build)
    models = vm_router.Models()
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
