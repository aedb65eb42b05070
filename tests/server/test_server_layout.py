"""Server-side layout: Graphviz when usable, the layered fallback otherwise, same record."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tpx_inspect.export.render import graphviz_available
from tpx_inspect.server.layout import LayoutEdge, LayoutNode, compute_layout, fallback_layout


def _chain(n: int) -> tuple[list[LayoutNode], list[LayoutEdge]]:
    nodes = [LayoutNode(str(i), f"op{i}") for i in range(n)]
    return nodes, [LayoutEdge(str(i), str(i + 1)) for i in range(n - 1)]


def _fake_dot(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "dot"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_missing_dot_falls_back(tmp_path):
    lay = compute_layout(*_chain(3), dot=str(tmp_path / "no-dot"))
    assert lay.engine == "fallback" and "not found" in lay.note


def test_failing_dot_falls_back(tmp_path):
    lay = compute_layout(*_chain(3), dot=_fake_dot(tmp_path, "echo broken >&2; exit 3"))
    assert lay.engine == "fallback" and "dot failed" in lay.note


def test_slow_dot_is_killed_and_falls_back(tmp_path):
    lay = compute_layout(*_chain(3), dot=_fake_dot(tmp_path, "exec sleep 30"), timeout=0.3)
    assert lay.engine == "fallback" and "timed out" in lay.note


def test_too_many_nodes_skip_dot():
    lay = compute_layout(*_chain(50), dot="dot", dot_max_nodes=10)
    assert lay.engine == "fallback" and "50 nodes" in lay.note


@pytest.mark.skipif(not graphviz_available(), reason="Graphviz binaries not installed")
def test_dot_layout_is_top_down_in_points():
    nodes, edges = _chain(3)
    lay = compute_layout(nodes, edges + [LayoutEdge("0", "2")], timeout=30)
    assert lay.engine == "dot", lay.note
    assert lay.nodes["0"].y < lay.nodes["1"].y < lay.nodes["2"].y
    assert len(lay.edges) == 3 and all(len(p) >= 2 for p in lay.edges)
    assert lay.edges[0][-1][1] <= lay.nodes["1"].y, "the arrow tip ends at the consumer"


def test_fallback_ranks_orders_and_keeps_boxes_apart():
    nodes = [LayoutNode(k, k) for k in "abcde"]
    edges = [LayoutEdge("a", "c"), LayoutEdge("b", "c"), LayoutEdge("c", "d"), LayoutEdge("a", "e")]
    lay = fallback_layout(nodes, edges)
    y = {k: b.y for k, b in lay.nodes.items()}
    assert y["a"] == y["b"] < y["c"] < y["d"] and y["e"] == y["c"]
    row = sorted((b.x - b.w / 2, b.x + b.w / 2) for k, b in lay.nodes.items() if b.y == y["c"])
    assert row[0][1] < row[1][0], "boxes of one rank do not overlap"
    assert lay == fallback_layout(nodes, edges), "deterministic"


def test_fallback_survives_cycles_and_deep_chains():
    nodes = [LayoutNode(k) for k in "abc"]
    cyc = fallback_layout(nodes, [LayoutEdge("a", "b"), LayoutEdge("b", "c"), LayoutEdge("c", "a")])
    assert len({b.y for b in cyc.nodes.values()}) == 3
    deep = fallback_layout(*_chain(10_000))
    assert deep.nodes["9999"].y > deep.nodes["0"].y


def test_labels_that_need_quoting_reach_dot(tmp_path):
    if not graphviz_available():
        pytest.skip("Graphviz binaries not installed")
    nodes = [LayoutNode('a"b', 'x\\"y\n{z}'), LayoutNode("c;d", "")]
    lay = compute_layout(nodes, [LayoutEdge('a"b', "c;d")], timeout=30)
    assert lay.engine == "dot", lay.note
    assert set(lay.nodes) == {'a"b', "c;d"}


def test_light_graph_collapses_like_the_real_one(runs_dir):
    """build_view hands collapse a light copy of the graph: it must give collapse's own view."""
    from tpx_inspect.collapse import collapse
    from tpx_inspect.format import load
    from tpx_inspect.server.graphview import State, build_view

    g = load(str(runs_dir / "scoped" / "trace.json")).graphs[0]
    for stub, span in ((False, 6), (True, 1), (True, 2)):
        ours = build_view(g, State(None, (), stub, span), dot=None)
        theirs = collapse(g, fold=False, stub=stub, span=span)
        assert [(n.id, n.kind, n.size) for n in ours.nodes] == [
            (v.id, v.kind, len(v.members)) for v in theirs.nodes
        ]
        assert [(e.src, e.dst, e.label) for e in ours.edges] == [
            (e.src, e.dst, e.label) for e in theirs.edges
        ]
