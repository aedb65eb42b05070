"""Issue 14: the "labelled at Fit" figure counts a box only when its whole label, its label on
two lines or a documented abbreviation of it (web/js/labels.js) is drawn at a legible size; a
label cut with "…" is drawn but never counted."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

FIT = """async ([label, room, scope, two]) => {
  const { fitLabel } = await import('/js/labels.js');
  const width = (t) => 10 * t.length;  // 10 points a character
  return fitLabel(label, room, width, { scope, twoLines: two });
}"""


def _fit(v, label, room, scope="", two=False):
    return v.page.evaluate(FIT, [label, room, scope, two])


def test_a_cut_label_is_drawn_but_not_counted(viewer):
    v = viewer.open("run=model&graph=0")
    assert _fit(v, "matmul", 60) == [["matmul"], True]
    lines, readable = _fit(v, "log_softmax_backward", 60)
    assert not readable and lines[0].endswith("…") and len(lines[0]) * 10 <= 60
    # two lines when the box is tall enough, broken after a "." or at a space
    assert _fit(v, "tok_emb.weight", 80, two=True) == [["tok_emb.", "weight"], True]
    # a repeat without its copies' range, a stub's "from" as an arrow
    assert _fit(v, "blocks.0-293 ×294", 110) == [["blocks ×294"], True]
    assert _fit(v, "from getitem", 90) == [["← getitem"], True]
    # a dotted name shortened only by what the enclosing frame names on screen
    assert _fit(v, "ln_f.weight", 60, scope="model.ln_f") == [["weight"], True]
    lines, readable = _fit(v, "ln_f.weight", 60, scope="model.head")
    assert not readable and lines[0].endswith("…")


def test_the_labelled_figure_matches_what_is_drawn(viewer):
    v = viewer.open("run=model&graph=0")
    labels = v.page.evaluate(
        """() => { const m = window.tpxViewer.main; m.fit(); m.keepLabels = true; m.render();
        m.keepLabels = false; return [m.labelled, m.labels]; }"""
    )
    counted, drawn = labels
    assert drawn and counted == sum(1 for _, _, ok in drawn if ok)
    for label, text, ok in drawn:
        assert ok != text.endswith("…"), (label, text)  # counted exactly when not cut
        if ok and text != label:
            shown = text.replace("\n", "")
            assert shown == label.replace(" ", "") or len(shown) < len(label), (label, text)
    # zoomed far out, boxes are drawn without labels and none is counted
    v.page.evaluate("() => { const m = window.tpxViewer.main; m.zoomBy(0.05); m.render(); }")
    assert int(v.page.get_attribute("#canvas", "data-labelled")) == 0
