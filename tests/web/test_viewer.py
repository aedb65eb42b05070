"""The viewer in headless Chromium against a real server on real traces: one test per thing a
person must be able to do (issue 8). Every test also asserts that the page logged no error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def click_box(v, box_id: str, double: bool = False) -> None:
    """Centre the view on a box, then click (or double-click) the middle of the canvas."""
    v.page.evaluate("(id) => window.tpxViewer.main.centerOn(id, 1)", box_id)
    v.page.wait_for_timeout(100)
    size = v.page.evaluate(
        "() => [window.tpxViewer.main.viewWidth, window.tpxViewer.main.viewHeight]"
    )
    where = {"x": size[0] / 2, "y": size[1] / 2}
    if double:
        v.page.dblclick("#canvas", position=where)
    else:
        v.page.click("#canvas", position=where)


def test_pick_run_and_graph_see_top_down_dag_and_pan_zoom_fit(viewer):
    v = viewer.open()
    runs = v.page.eval_on_selector_all("#run option", "os => os.map(o => o.value)")
    assert set(runs) == {"model", "wrong-sin", "wide"}
    v.page.select_option("#run", "model")
    v.wait("s.run === 'model' && s.view !== null")
    # Picked while the run may still be loading: the later pick wins, stale replies are dropped.
    v.page.select_option("#graph", "1")
    v.page.wait_for_selector("body[data-loaded='model/1']", timeout=10_000)
    assert v.state("s.graph") == 1 and v.page.input_value("#graph") == "1"
    # a box's first line and the rest (the output shape) as drawn
    boxes = v.state(
        "s.view.nodes.map(n => ({kind: n.kind, y: n.y, label: n.label + ' ' + (n.sublabel || '')}))"
    )
    loss_y = max(b["y"] for b in boxes if b["kind"] == "loss")
    assert all(b["y"] < loss_y for b in boxes if b["kind"] in ("leaf", "param"))  # top-down
    assert int(v.page.get_attribute("#canvas", "data-drawn")) > 0
    cam0 = v.page.evaluate("() => ({...window.tpxViewer.main.cam})")
    v.page.mouse.move(500, 400)
    v.page.mouse.wheel(0, -400)
    v.page.wait_for_timeout(100)
    cam1 = v.page.evaluate("() => ({...window.tpxViewer.main.cam})")
    assert cam1["k"] > cam0["k"]
    v.page.mouse.move(500, 400)
    v.page.mouse.down()
    v.page.mouse.move(600, 450, steps=5)
    v.page.mouse.up()
    cam2 = v.page.evaluate("() => ({...window.tpxViewer.main.cam})")
    assert cam2["x"] < cam1["x"] and cam2["y"] < cam1["y"]
    v.page.click("#fit")
    cam3 = v.page.evaluate("() => ({...window.tpxViewer.main.cam})")
    assert cam3["k"] < cam1["k"]
    labels = " ".join(b["label"] for b in boxes)
    assert "5x3" in labels or "(5, 3)" in labels  # output shapes on nodes


def test_expand_collapse_scopes_and_stub_jump(viewer):
    v = viewer.open("run=model&graph=0")
    first = v.state("s.view.nodes.length")
    groups = v.state("s.view.nodes.filter(n => n.group !== null).map(n => n.group)")
    assert groups, "the three identical blocks open folded (x3)"
    box = v.state(f"s.view.nodes.find(n => n.group === {groups[0]!r})")
    assert box["id"] == groups[0] == "r:s:model.1+3" and box["count"] == 3  # a stable id
    click_box(v, box["id"], double=True)
    v.wait(f"s.view.expanded.includes({groups[0]!r})")
    assert v.state("s.view.nodes.length") > first
    v.page.click("#collapse-all")
    v.wait("s.view.expanded.length === 0")
    assert v.state("s.view.nodes.length") < first
    v.page.select_option("#stub", "true")
    v.page.click("#expand-all")
    v.wait(
        "s.view.expanded.length === s.scopes.length && s.view.nodes.some(n => n.kind === 'stub')"
    )
    stub = v.state("s.view.nodes.find(n => n.kind === 'stub')")
    click_box(v, stub["id"])
    v.wait(f"s.selected === {stub['node']}")


def test_search_by_op_scope_source_and_id_and_jump_through_hits(viewer):
    v = viewer.open("run=model&graph=0")
    v.page.keyboard.press("/")
    v.page.keyboard.type("tanh")
    v.page.wait_for_function("() => document.getElementById('hits').textContent === '3 hits'")
    assert v.state("s.hits.length") == 3  # one tanh per block (the server searches)
    v.page.keyboard.press("Enter")
    v.wait("s.selected !== null")
    first = v.state("s.selected")
    v.page.keyboard.press("Escape")
    v.page.keyboard.press("n")
    v.wait(f"s.selected !== {first}")
    assert v.state("s.hits.includes(s.selected)")
    assert "tanh" in v.page.inner_text("#panel")
    for query in ("1.fc2", "conftest.py", "#3"):
        v.page.fill("#search", query)
        v.page.wait_for_function(
            "() => /^\\d+ hits$/.test(document.getElementById('hits').textContent)"
        )
        assert v.state("s.hits.length") >= 1, query


def test_node_details_values_heatmap_saved_gradients_order_times(viewer):
    v = viewer.open("run=model&graph=0")
    mm = v.state("s.nodes.find(n => n.op === 'matmul').id")
    v.page.evaluate("(id) => window.tpxViewer.select(id)", mm)
    v.page.wait_for_selector("#panel h2")
    text = v.page.inner_text("#panel")
    for needle in (
        "matmul",
        "source",
        "scope",
        "INPUTS",
        "SAVED FOR BACKWARD",
        "OUTPUT",
        "GRADIENT (INCOMING)",
        "backward order",
        "forward time",
        "backward time",
    ):
        assert needle.lower() in text.lower(), needle
    assert re.search(r"conftest\.py:\d+", text)
    assert v.page.locator("#panel canvas.heatmap").count() >= 1  # 2-D values as a heatmap
    assert re.search(r"\d+(\.\d+)? (B|KiB)", text)  # saved bytes


def test_play_backward_highlights_running_node_and_its_inputs(viewer):
    v = viewer.open("run=model&graph=0")
    order = v.state("s.order")
    v.page.click("#canvas")
    v.page.keyboard.press(".")
    v.wait("s.play.index === 0")
    assert f"#{order[0]}" in v.status()
    v.page.keyboard.press(".")
    v.wait("s.play.index === 1")
    marks = v.page.evaluate("() => [...window.tpxViewer.main.marked.values()]")
    assert "active" in marks and "accum" in marks
    v.page.click("#play")
    v.wait(f"s.play.index === {len(order) - 1} && s.play.timer === null", timeout=20_000)
    assert "Play" in v.page.inner_text("#play")


@pytest.mark.parametrize(
    "key", ["grad_norm", "saved_bytes", "backward_time", "check_error", "nonfinite"]
)
def test_colour_by_value_with_legend(viewer, key):
    v = viewer.open("run=model&graph=0")
    v.page.select_option("#colour", key)
    v.page.wait_for_selector("#legend", state="visible")  # the server computes the values
    fills = v.page.evaluate("() => window.tpxViewer.main.fill.size")
    assert fills > 0
    assert v.page.inner_text("#legend-label")


def test_checks_mark_failing_nodes_and_focus_the_first(viewer):
    v = viewer.open("run=model&graph=0")
    v.page.keyboard.press("x")
    v.wait("s.checked")
    assert "pass" in v.status()
    v = viewer.open("run=wrong-sin&graph=0")
    v.page.click("#checks")
    v.wait("s.checked && s.selected !== null")
    assert v.page.get_attribute("body", "data-checked") == "fail"
    sin = v.state("s.nodes.find(n => n.op === 'sin').id")
    assert v.state("s.selected") == sin
    assert v.state(f"s.findings.has({sin})")
    v.page.wait_for_selector("#panel h2")  # the node's details arrive after the selection
    assert "sin" in v.page.inner_text("#panel")


def test_compare_two_graphs_side_by_side_and_overlaid(viewer):
    v = viewer.open("run=model&graph=0")
    v.page.wait_for_selector("body[data-compare-ready]")
    option = v.page.eval_on_selector_all(
        "#compare option",
        "os => os.map(o => o.value).find(x => x.startsWith('model') && x.endsWith('1'))",
    )
    v.page.select_option("#compare", option)
    v.wait("s.diff !== null")
    assert v.page.is_visible("#canvas-b")
    assert "compared with" in v.status()
    v.page.select_option("#compare-mode", "overlay")
    v.page.wait_for_function("() => document.body.dataset.compared === 'overlay'")
    assert not v.page.is_visible("#canvas-b")
    mm = v.state("s.nodes.find(n => n.op === 'matmul').id")
    v.page.evaluate("(id) => window.tpxViewer.select(id)", mm)
    v.page.wait_for_selector("#panel h2")
    assert "COMPARED" in v.page.inner_text("#panel").upper()


@pytest.mark.parametrize("fmt", ["svg", "png", "dot", "json", "html"])
def test_export_current_view(viewer, fmt, tmp_path, browser):
    v = viewer.open("run=model&graph=0")
    with v.page.expect_download() as info:
        v.page.select_option("#export", fmt)
    path = Path(tmp_path) / f"out.{fmt}"
    info.value.save_as(path)
    data = path.read_bytes()
    assert len(data) > 100
    if fmt == "svg":
        assert data.startswith(b"<svg") and b"<rect" in data
        assert b"model" in data  # the collapsed scope box of the current view
    elif fmt == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
    elif fmt == "dot":
        assert b"digraph" in data
    elif fmt == "json":
        assert data.lstrip().startswith(b"{")
    else:  # a standalone page that works without the server
        page = browser.new_page()
        page.goto(path.as_uri())
        assert page.locator("svg g[data-id]").count() > 0
        page.fill("#q", "tanh")
        assert "hits" in page.inner_text("#count")
        page.close()


def test_deep_link_names_run_graph_and_node(viewer):
    v = viewer.open("run=model&graph=1")
    node = v.state("s.nodes.find(n => n.op === 'tanh').id")
    v.page.evaluate("(id) => window.tpxViewer.select(id)", node)
    v.wait(f"s.selected === {node}")
    url = v.page.url
    assert f"node={node}" in url and "graph=1" in url and "run=model" in url
    fresh = viewer.open(url.split("#", 1)[1])
    fresh.wait(f"s.selected === {node} && s.graph === 1")
    assert f"#{node}" in fresh.page.inner_text("#panel h2")


def test_keyboard_alone_and_light_dark(viewer):
    v = viewer.open("run=model&graph=0")
    v.page.keyboard.press("j")
    v.wait("s.selected !== null")
    first = v.state("s.selected")
    v.page.keyboard.press("j")
    v.wait(f"s.selected !== {first}")
    v.page.keyboard.press("e")
    v.wait("s.view.expanded.length > 0")
    v.page.keyboard.press("c")
    v.wait("s.view.expanded.length === 0")
    k0 = v.page.evaluate("() => window.tpxViewer.main.cam.k")
    v.page.keyboard.press("+")
    assert v.page.evaluate("() => window.tpxViewer.main.cam.k") > k0
    v.page.keyboard.press("f")
    theme = v.page.get_attribute("html", "data-theme")
    v.page.keyboard.press("t")
    assert v.page.get_attribute("html", "data-theme") != theme
    v.page.keyboard.press("Tab")
    assert v.page.evaluate("() => document.activeElement !== document.body")
