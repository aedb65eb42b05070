"""Issue 14 in the viewer: level of detail, frames, "loading" while records come, value figures
and the mended controls (legend, log scale, Enter on buttons, run names, deep links, compare)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_search_says_loading_until_the_records_arrive(viewer):
    v = viewer.open("run=model&graph=0")
    held, hold = [], [True]
    v.page.route("**/search?*", lambda r: held.append(r) if hold[0] else r.continue_())
    v.page.fill("#search", "tanh")
    assert v.page.inner_text("#hits") == "loading…"  # the server searches; not "0 hits"
    v.page.wait_for_function("() => true")  # let the held request arrive
    hold[0] = False
    for route in held:
        route.continue_()
    v.page.wait_for_function("() => document.getElementById('hits').textContent === '3 hits'")


def test_far_boxes_drawn_as_aggregates_near_ones_labelled_frames_round_expanded(viewer):
    v = viewer.open("run=model&graph=0")
    frames = v.page.evaluate("() => window.tpxViewer.main.graph.frames.map(f => f.id)")
    assert "s:model" in frames  # the expanded scope drawn as a frame around its members
    v.page.evaluate("() => { const m = window.tpxViewer.main; m.cam.k = 0.02; m.render(); }")
    assert int(v.page.get_attribute("#canvas", "data-aggregated")) > 0
    assert int(v.page.get_attribute("#canvas", "data-labelled")) == 0
    v.page.evaluate("() => { const m = window.tpxViewer.main; m.fit(); m.render(); }")
    drawn = int(v.page.get_attribute("#canvas", "data-drawn"))
    assert drawn > 0 and int(v.page.get_attribute("#canvas", "data-aggregated")) == 0
    box = v.state("s.view.nodes.find(n => n.kind === 'op').id")
    v.page.evaluate(
        "(id) => { const m = window.tpxViewer.main; m.centerOn(id, 1); m.render(); }", box
    )
    assert int(v.page.get_attribute("#canvas", "data-labelled")) > 0


def test_legend_names_the_unit_offers_log_and_hides(viewer):
    v = viewer.open("run=model&graph=0")
    label = "() => document.getElementById('legend-label').textContent"
    v.page.select_option("#colour", "saved_bytes")  # values and unit from the server
    v.page.wait_for_function(f"() => ({label})().includes('bytes saved for backward')")
    assert "B" in v.page.inner_text("#legend-max")
    v.page.select_option("#scale", "log")
    v.page.wait_for_function(f"() => ({label})().includes('log scale')")
    v.page.select_option("#scale", "linear")
    v.page.wait_for_function(f"() => ({label})().includes('linear scale')")
    v.page.click("#canvas")
    v.page.keyboard.press("l")
    assert not v.page.is_visible("#legend") and v.page.is_visible("#legend-show")
    v.page.click("#legend-show")
    assert v.page.is_visible("#legend")


def test_enter_on_a_focused_button_presses_it(viewer):
    v = viewer.open("run=model&graph=0")
    v.page.click("#expand-all")
    v.wait("s.view.expanded.length > 0")
    v.page.focus("#collapse-all")
    v.page.keyboard.press("Enter")
    v.wait("s.view.expanded.length === 0")


def test_runs_of_one_script_get_told_apart(viewer):
    v = viewer.open("run=model&graph=0")
    labels = v.page.evaluate(
        "async () => { const m = await import('/js/load.js'); return [...m.runLabels(["
        "{id: 'train-1', name: 'train'}, {id: 'train-2', name: 'train'}, {id: 'x', name: 'x'}"
        "]).values()]; }"
    )
    assert labels == ["train · train-1", "train · train-2", "x"]


def test_deep_link_change_of_run_keeps_its_node(viewer):
    v = viewer.open("run=model&graph=0")
    v.page.evaluate("() => { location.hash = 'run=wrong-sin&graph=0&node=1'; }")
    v.wait("s.run === 'wrong-sin' && s.selected === 1", timeout=15_000)
    v.page.wait_for_selector("#panel h2")
    assert "#1" in v.page.inner_text("#panel h2")


def test_values_heatmap_scale_hover_histogram_and_saved_values(viewer):
    v = viewer.open("run=model&graph=0")
    mm = v.state("s.nodes.find(n => n.op === 'matmul').id")
    v.page.evaluate("(id) => window.tpxViewer.select(id)", mm)
    v.page.wait_for_selector("#panel canvas.heatmap")
    figure = v.page.locator("#panel figure.value-figure").first
    assert figure.locator(".heatmap-scale .bar").count() == 1
    figure.locator("canvas.heatmap").hover(position={"x": 2, "y": 2})
    assert " = " in figure.locator(".heatmap-readout").inner_text()
    assert v.page.locator("#panel figure.histogram svg rect").count() > 1
    assert "saved input 0:" in v.page.inner_text("#panel")


def test_side_by_side_both_fitted_and_coloured_renames_not_changes(viewer):
    v = viewer.open("run=model&graph=0")
    v.page.wait_for_selector("body[data-compare-ready]")
    option = v.page.eval_on_selector_all(
        "#compare option",
        "os => os.map(o => o.value).find(x => x.startsWith('model') && x.endsWith('1'))",
    )
    v.page.select_option("#compare", option)
    v.page.wait_for_function("() => document.body.dataset.compared === 'side'")
    fits = v.page.evaluate(
        "() => { const m = window.tpxViewer.main; return [m.cam.k * m.graph.width, m.viewWidth]; }"
    )
    assert fits[0] <= fits[1] + 1  # the left graph fits its half
    assert v.page.evaluate("() => window.tpxViewer.main.fill.size") > 0
    assert "changed" in v.status() and v.page.is_visible("#legend")


def test_values_past_one_page_get_the_servers_heatmap_and_histogram(viewer):
    v = viewer.open("run=wide&graph=0")
    tanh = v.state("s.nodes.find(n => n.op === 'tanh').id")
    v.page.evaluate("(id) => window.tpxViewer.select(id)", tanh)
    v.page.wait_for_selector("#panel canvas.heatmap")
    assert v.page.locator("#panel canvas.heatmap").first.get_attribute("width") == "30"
    assert "24×30" in v.page.inner_text("#panel .heatmap-readout")
    assert v.page.locator("#panel figure.histogram").first.locator("rect").count() == 40
