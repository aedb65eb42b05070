"""Exports: golden DOT, colours and clusters, folding and stubs, rendering, Model Explorer."""

from __future__ import annotations

import importlib
import json
import subprocess

import pytest

import tpx as tp
import tpx_inspect
from tests.inspect._inspect_graphs import small_capture
from tests.inspect.test_inspect_format import golden
from tpx_inspect import ExportError, GraphvizNotFoundError, collapse
from tpx_inspect.export import KIND_COLOURS, STATUS_COLOURS, graphviz_available, render, to_dot

render_module = importlib.import_module("tpx_inspect.export.render")

needs_dot = pytest.mark.skipif(not graphviz_available(), reason="Graphviz binaries missing")


def small_graph():
    return small_capture().trace.graphs[0]


def test_golden_dot():
    golden("small_graph.dot", to_dot(small_graph(), order=True))


def test_dot_shows_ops_shapes_kinds_and_scopes():
    dot = to_dot(small_graph())
    assert 'n1 [label="matmul\\n4x2"' in dot
    assert 'n0 -> n1 [label="3x2"]' in dot
    assert 'n2 -> n3 [label="4x2 (x2)"]' in dot  # the diamond's two edges, merged
    assert f'fillcolor="{KIND_COLOURS["param"]}"' in dot
    assert f'fillcolor="{KIND_COLOURS["loss"]}"' in dot
    assert 'label="enc"' in dot and 'label="proj"' in dot
    assert dot.index('label="enc"') < dot.index('label="proj"') < dot.index("n1 [")


def test_order_numbers_are_optional():
    g = small_graph()
    assert '"#0 sum' in to_dot(g, order=True) and "#0" not in to_dot(g)


def test_status_colours_mark_nonfinite_and_given_statuses():
    with tpx_inspect.capture("all") as cap:
        x = tp.asarray([0.0, 1.0], requires_grad=True)
        x.log().sum().backward()  # log(0) = -inf
    dot = to_dot(cap.trace.graphs[0])
    assert f'color="{STATUS_COLOURS["nonfinite"]}"' in dot
    dot = to_dot(small_graph(), status={1: "warn"})
    assert f'color="{STATUS_COLOURS["warn"]}"' in dot
    with pytest.raises(ValueError, match="unknown status"):
        to_dot(small_graph(), status={1: "purple"})


def _deep_graph(layers: int = 12):
    w = tp.ones((2, 2), requires_grad=True)
    with tpx_inspect.capture("all", params={"w": w}) as cap:
        h = tp.ones((1, 2))
        for i in range(layers):
            with tp.scope(f"layer{i}"), tp.scope("inner"):
                h = (h @ w).tanh()
        (h * w.sum()).sum().backward()  # w used at the top and at the bottom
    return cap.trace.graphs[0]


def test_folding_by_scope_and_stubbing_long_edges():
    g = _deep_graph()
    full = collapse(g, fold=False, stub=False)
    assert full.depth is None and full.stubbed == 0 and len(full.nodes) == len(g.nodes)
    folded = collapse(g, fold=True, stub=True, max_nodes=20, span=4)
    assert folded.depth == 2  # the deepest scope level that fits
    scopes = [n for n in folded.nodes if n.kind == "scope"]
    assert [n.label for n in scopes][:2] == ["layer0.inner (2)", "layer1.inner (2)"]
    assert collapse(g, fold=True, max_nodes=10).depth == 1  # nothing fits: level 1
    from_stubs = [n for n in folded.nodes if n.kind == "stub" and n.id.startswith("f")]
    to_stubs = [n for n in folded.nodes if n.kind == "stub" and n.id.startswith("t")]
    assert folded.stubbed == len(from_stubs)
    # w feeds every layer: one "to" stub beside it, one "from" stub beside each far use
    to_w = to_stubs[0]
    from_w = [f for f in from_stubs if f.link == to_w.id]
    assert len(from_w) >= 2 and to_w.label == f"to {len(from_w)} uses"
    assert to_w.link == from_w[0].id and all(f.label == "from w #0" for f in from_w)
    assert to_stubs[1].label.startswith("to mul #")  # w.sum() used at the bottom
    dot = to_dot(g, fold=True, stub=True, max_nodes=20, span=4)
    assert f'href="#{from_w[0].id}"' in dot and "style=dashed" in dot


def test_large_graphs_are_folded_and_stubbed_by_default():
    g = _deep_graph(layers=160)  # 2 nodes per layer: over the LARGE threshold
    v = collapse(g)
    assert v.depth is not None and v.stubbed > 0
    assert len([n for n in v.nodes if n.kind != "stub"]) < len(g.nodes)
    small = collapse(small_graph())
    assert small.depth is None and small.stubbed == 0


def test_render_dot_without_binaries(tmp_path, monkeypatch):
    monkeypatch.setattr(render_module.shutil, "which", lambda name: None)
    p = render(small_graph(), str(tmp_path / "g.dot"))
    with open(p, encoding="utf-8") as f:
        assert f.read().startswith("digraph")
    with pytest.raises(GraphvizNotFoundError, match="apt-get install graphviz"):
        render(small_graph(), str(tmp_path / "g.svg"))
    with pytest.raises(ValueError, match="unknown export format"):
        render(small_graph(), str(tmp_path / "g.gif"))


def test_layout_timeout_is_a_clear_error(tmp_path, monkeypatch):
    def slow(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs.get("timeout"))

    monkeypatch.setattr(render_module.shutil, "which", lambda name: "/usr/bin/dot")
    monkeypatch.setattr(render_module.subprocess, "run", slow)
    with pytest.raises(ExportError, match=r"longer than 0\.5 s"):
        render(small_graph(), str(tmp_path / "g.svg"), timeout=0.5)


@needs_dot
@pytest.mark.parametrize("fmt, magic", [("svg", b"<?xml"), ("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_render_with_graphviz(tmp_path, fmt, magic):
    p = render(small_graph(), str(tmp_path / f"g.{fmt}"))
    with open(p, "rb") as f:
        assert f.read().startswith(magic)


def test_jupyter_reprs():
    g = small_graph()
    html = g._repr_html_()
    assert html.startswith("<div") and ("<svg" in html or "<pre>" in html)
    svg = g._repr_svg_()
    assert svg is None or "<svg" in svg


def test_model_explorer_json():
    doc = tpx_inspect.to_model_explorer(small_graph())
    golden("small_model_explorer.json", json.dumps(doc, indent=1) + "\n")
    nodes = doc["graphs"][0]["nodes"]
    assert nodes[1]["namespace"] == "enc/proj" and nodes[3]["namespace"] == "enc"
    assert nodes[1]["incomingEdges"] == [
        {"sourceNodeId": "0", "sourceNodeOutputId": "0", "targetNodeInputId": "1"}
    ]
    assert nodes[1]["outputsMetadata"][0]["attrs"][0] == {
        "key": "tensor_shape", "value": "float32[4,2]",
    }  # fmt: skip
