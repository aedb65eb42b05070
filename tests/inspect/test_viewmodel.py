"""The view model (tpx_inspect.viewmodel): folding of repeated blocks and of loops in unscoped
code, parameters in the scope that uses them, one stub per (frame, source), stable ids, the
composed layout, value overlays, and the folded DOT export."""

from __future__ import annotations

import numpy as np
import pytest

import tpx as tp
import tpx_inspect
from tpx_inspect.export.folded import folded_dot
from tpx_inspect.viewmodel import build, layout
from tpx_inspect.viewmodel.layout import CACHE
from tpx_inspect.viewmodel.values import heatmap, histogram, scale
from tpx_inspect.viewmodel.wire import layout_json, search


def blocks_graph(blocks: int = 4, ops: int = 3, shared: bool = False):
    """``blocks`` identical scoped blocks ``model.blocks.K`` (own weights, or one shared)."""
    tp.manual_seed(0)
    x = tp.randn((2, 4), requires_grad=True)
    ws = [tp.randn((4, 4), requires_grad=True) for _ in range(1 if shared else blocks)]
    with tpx_inspect.capture(values="none") as cap:
        h = x
        for b in range(blocks):
            with tp.scope(f"model.blocks.{b}"):
                with tp.scope("fc"):
                    h = h @ ws[0 if shared else b]
                with tp.scope("act"):
                    for _ in range(ops):
                        h = h.tanh()
        h.sum().backward()
    return cap.trace.graphs[0]


def scalar_mlp_graph(batch: int = 6, width: int = 4):
    """micrograd's neuron loop on scalar tensors, no scope: batch x layer x neuron loops."""
    rng = np.random.default_rng(0)
    w1 = [
        [tp.asarray(float(v), requires_grad=True) for v in rng.normal(size=2)] for _ in range(width)
    ]
    w2 = [tp.asarray(float(v), requires_grad=True) for v in rng.normal(size=width)]
    with tpx_inspect.capture(values="none") as cap:
        losses = []
        for k in range(batch):
            xs = [tp.asarray(float(k)), tp.asarray(1.0)]
            hidden = [sum((w * x for w, x in zip(ws, xs)), tp.asarray(0.0)).relu() for ws in w1]
            out = sum((w * h for w, h in zip(w2, hidden)), tp.asarray(0.0))
            losses.append((1 - out).relu())
        sum(losses).backward()
    return cap.trace.graphs[0]


def test_identical_consecutive_blocks_fold_into_one_repeat_that_expands_to_its_copies():
    vm = build(blocks_graph(blocks=5))
    rep = vm.groups["r:s:model.blocks.0+5"]
    assert rep.kind == "repeat" and rep.count == 5 and rep.label == "blocks.0-4 ×5"
    assert rep.children == tuple(f"s:model.blocks.{b}" for b in range(5))
    collapsed = layout(vm, ["root", "s:model", "s:model.blocks"])
    assert [b.count for b in collapsed.boxes if b.id == rep.id] == [5]
    opened = layout(vm, ["root", "s:model", "s:model.blocks", rep.id])
    assert {b.id for b in opened.boxes} >= set(rep.children)


def test_blocks_sharing_one_weight_still_fold_and_the_weight_sits_above_them():
    vm = build(blocks_graph(blocks=3, shared=True))
    assert "r:s:model.blocks.0+3" in vm.groups
    w = next(i for i, k in enumerate(vm.cols.kind) if k in ("leaf", "param") and i > 0)
    assert vm.owner[w] == "s:model.blocks"  # innermost group holding all its consumers


def test_different_blocks_do_not_fold():
    tp.manual_seed(0)
    x = tp.randn((2, 4), requires_grad=True)
    with tpx_inspect.capture(values="none") as cap:
        with tp.scope("b0"):
            h = x.tanh()
        with tp.scope("b1"):
            h = h.exp()  # another op
        h.sum().backward()
    vm = build(cap.trace.graphs[0])
    assert not [g for g in vm.groups if g.startswith("r:")]


def test_parameters_sit_inside_the_scope_that_uses_them():
    g = blocks_graph(blocks=2)
    vm = build(g)
    params = [i for i, k in enumerate(vm.cols.kind) if k in ("leaf", "param")]
    homes = {vm.owner[i] for i in params}
    assert {"s:model.blocks.0.fc", "s:model.blocks.1.fc"} <= homes  # each block's own weight
    assert vm.owner[params[0]] == "s:model.blocks.0.fc"  # the input x: used only by block 0


def test_one_input_stub_per_frame_and_source_not_one_per_use():
    w = tp.ones(3, requires_grad=True)
    with tpx_inspect.capture(values="none") as cap:
        y = w * 2.0
        with tp.scope("enc"):
            parts = [(y * float(k)).exp() for k in range(6)]  # six uses of y inside enc
            z = parts[0]
            for p in parts[1:]:
                z = z + p
        z.sum().backward()
    vm = build(cap.trace.graphs[0])
    lay = layout(vm, ["root", "s:enc"])
    stubs = [b for b in lay.boxes if b.kind == "stub"]
    assert [s.id for s in stubs] == ["i:s:enc<n1"] and stubs[0].link == "n1"
    uses = [e for e in lay.edges if e.src == "i:s:enc<n1"]
    assert sum(e.count for e in uses) == 6  # six graph edges (the loop of uses may fold)


def test_loops_in_unscoped_code_fold_into_a_hierarchy():
    batch = 6
    vm = build(scalar_mlp_graph(batch=batch))
    repeats = [vm.groups[g] for g in vm.groups["root"].children if g.startswith("r:")]
    samples = max(repeats, key=lambda r: r.size)
    assert samples.count == batch and all(c.startswith("l:") for c in samples.children)
    first = vm.groups[samples.children[0]]
    assert any(c.startswith("r:") for c in first.children)  # the neuron loop inside a sample
    first_screen = layout(vm, vm.default_expanded)
    assert len(first_screen.boxes) < 10 and len(vm.owner) > 150


def test_box_ids_are_stable_across_builds_and_states():
    g = blocks_graph(blocks=3)
    a, b = build(g), build(g)
    assert list(a.groups) == list(b.groups) and a.owner == b.owner
    one = layout(a, a.default_expanded)
    every = layout(a, list(a.groups))
    ids_one = {x.id for x in one.boxes}
    ids_all = {x.id for x in every.boxes}
    assert {i for i in ids_one if i.startswith("n")} <= ids_all  # a node box keeps its id
    assert all(f"n{i}" in ids_all for i in range(len(a.owner)))  # every node shown once
    assert len([x for x in every.boxes if x.node is not None and x.kind != "stub"]) == len(a.owner)


def test_every_expanded_group_is_a_frame_around_its_members():
    vm = build(blocks_graph(blocks=2))
    lay = layout(vm, list(vm.groups))
    frames = {f.id: f for f in lay.frames}
    for box in lay.boxes:
        if box.parent != "root":
            f = frames[box.parent]
            assert abs(box.x - f.x) <= (f.w - box.w) / 2 + 1e-6
            assert abs(box.y - f.y) <= (f.h - box.h) / 2 + 1e-6


def test_identical_blocks_are_laid_out_once():
    vm = build(blocks_graph(blocks=8))
    CACHE.items.clear()
    layout(vm, list(vm.groups))
    per_block = 1 + 2  # a block's frame and its two sub-scopes (fc, act)
    assert len(CACHE.items) < 8 * per_block / 2


def test_a_long_chain_builds_and_lays_out_without_recursion():
    x = tp.ones(2, requires_grad=True)
    with tpx_inspect.capture(values="none", timing=False) as cap:
        y = x
        for _ in range(3000):
            y = y * 1.0
        y.sum().backward()
    vm = build(cap.trace.graphs[0])
    assert len(layout(vm, vm.default_expanded).boxes) < 10
    every = layout(vm, list(vm.groups)).boxes
    assert len([b for b in every if b.kind != "stub"]) == len(vm.owner)


def test_layout_json_clips_to_the_viewport_and_aggregates_small_frames():
    vm = build(blocks_graph(blocks=4))
    lay = layout(vm, list(vm.groups))
    full = layout_json(lay)
    assert len(full["boxes"]) == len(lay.boxes) and not full["aggregates"]
    top = layout_json(lay, viewport=(0, 0, lay.width, lay.height / 3))
    assert 0 < len(top["boxes"]) < len(full["boxes"])
    assert all(b["y"] - b["h"] / 2 <= lay.height / 3 for b in top["boxes"])
    coarse = layout_json(lay, min_size=lay.width * 2)
    assert coarse["aggregates"] and len(coarse["boxes"]) < len(full["boxes"])


def test_search_matches_fields_and_prefixes():
    vm = build(blocks_graph(blocks=2))
    assert len(search(vm, "op:matmul")) == 2
    assert len(search(vm, "scope:blocks.1.act")) == 3
    assert search(vm, "TANH") == search(vm, "op:tanh") and search(vm, "  ") == []


def test_heatmap_downsamples_big_values_and_keeps_nonfinite_counts():
    a = np.arange(300 * 200, dtype=float).reshape(300, 200)
    a[0, 0] = np.nan
    h = heatmap(a, max_side=64)
    assert h["downsampled"] and h["rows"] <= 64 and h["cols"] <= 64 and h["nan"] == 1
    assert h["block"] == [5, 4] and h["data"][0][1] == pytest.approx(a[:5, 4:8].mean())
    one = heatmap(np.array([1.0, 2.0, 3.0]))
    assert (one["rows"], one["cols"], one["downsampled"]) == (1, 3, False)


def test_histogram_and_log_scale_suggestion():
    h = histogram(np.array([0.0, 1.0, 2.0, np.inf, np.nan]), bins=4)
    assert sum(h["counts"]) == 3 and (h["nan"], h["inf"], h["zeros"]) == (1, 1, 1)
    assert not scale(np.array([1.0, 2.0, 3.0]))["log_suggested"]
    assert scale(np.array([1.0, 1.0, 1e6]))["log_suggested"]


def test_folded_dot_of_a_large_graph_is_small_and_uses_one_stub_per_source():
    g = blocks_graph(blocks=40, ops=8)
    assert len(g.nodes) > 300
    dot = tpx_inspect.to_dot(g)  # more than LARGE nodes: the view model's DOT
    assert 'label="blocks.0-39 ×40"' in dot
    assert dot.count("->") < 40 and dot.count("[label=") < 40
    assert dot == folded_dot(g)  # pure and deterministic
    assert tpx_inspect.to_dot(g, fold=False, stub=False).count("->") > len(g.nodes) - 5
