"""The cold open of a linked graph: index.html asks the graph's first screen while the page's
modules load, and the viewer draws that answer instead of asking again; a link naming another
state is not answered with it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def _layout_posts(page) -> list[str]:
    posts: list[str] = []

    def seen(request) -> None:
        if request.method == "POST" and request.url.endswith("/layout"):
            posts.append(request.post_data)

    page.on("request", seen)
    return posts


def test_the_first_screen_is_asked_while_the_modules_load_and_drawn(viewer):
    posts = _layout_posts(viewer.page)
    v = viewer.open("run=model&graph=0")
    v.wait("Number(document.getElementById('canvas').dataset.frame) > 0")
    assert posts == ['{"expanded":null}'], "one request: the page's early one"
    assert v.page.evaluate("() => window.tpxFirstScreen") is None, "its answer was taken"
    early = v.state("s.view.nodes.map(n => n.id)")
    posts.clear()
    v.page.evaluate("() => window.tpxViewer.state.expanded = new Set()")
    v.page.evaluate("() => window.tpxViewer.toggle('root')")  # the state asked by the modules
    v.page.evaluate("() => window.tpxViewer.toggle('root')")
    assert v.state("s.view.nodes.map(n => n.id)") == early


def test_a_link_naming_open_groups_is_not_answered_with_the_first_screen(viewer):
    posts = _layout_posts(viewer.page)
    v = viewer.open("run=model&graph=0&expand=root")
    v.wait("Number(document.getElementById('canvas').dataset.frame) > 0")
    assert posts and all('"expanded":["root"]' in p for p in posts), "no early request"
