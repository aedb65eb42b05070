"""Regional answers (tpx_inspect.viewmodel.region): a region of an arranged state is the same
answer as the cut of the whole composed layout, and ``locate`` finds the box showing a node at
the place the whole layout draws it; the server's /layout with a viewport answers regionally
and /locate answers where a node or box is."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient

from tests.helpers.vm_runs import six_blocks_run
from tests.inspect.test_viewmodel import blocks_graph, scalar_mlp_graph
from tests.inspect.test_viewmodel_index import random_states
from tpx_inspect.server import create_app
from tpx_inspect.viewmodel import build
from tpx_inspect.viewmodel.layout import Arranged
from tpx_inspect.viewmodel.region import locate, region_json
from tpx_inspect.viewmodel.wire import layout_json


def _sorted(doc: dict) -> dict:
    doc = dict(doc)
    doc["edges"] = sorted(doc["edges"], key=lambda e: (e["src"], e["dst"]))
    return doc


def _cases(lay):
    w, h = lay.width, lay.height
    sides = sorted(max(f.w, f.h) for f in lay.frames) or [1.0]
    views = (None, (0, 0, w, h), (w / 4, h / 3, w / 2, h / 5), (w / 2, 0, 30, 30), (-50, -50, 9, 9))
    for vp in views:
        for min_size in (0, sides[len(sides) // 3] + 1, sides[-2:][0] + 1, 1e9):
            yield vp, min_size


@pytest.mark.parametrize("make", [lambda: blocks_graph(blocks=5), scalar_mlp_graph])
def test_a_region_is_the_cut_of_the_whole_layout(make):
    vm = build(make())
    for state in random_states(vm, random.Random(2), 3):
        arr = Arranged(vm, state)
        lay = arr.layout()
        for vp, min_size in _cases(lay):
            want = _sorted(layout_json(lay, vp, min_size))
            assert _sorted(region_json(arr, vp, min_size)) == want, (sorted(state), vp, min_size)


def test_locate_finds_the_box_showing_a_node_where_the_layout_draws_it():
    vm = build(blocks_graph(blocks=4))
    for state in random_states(vm, random.Random(3), 4):
        arr = Arranged(vm, state)
        lay = arr.layout()
        rects = {b.id: (b.x, b.y, b.w, b.h) for b in lay.boxes}
        rects |= {f.id: (f.x, f.y, f.w, f.h) for f in lay.frames}
        parent = {b.id: b.parent for b in lay.boxes} | {f.id: f.parent for f in lay.frames}
        for i in range(len(vm.owner)):
            where = locate(arr, node=i)
            assert (where["x"], where["y"], where["w"], where["h"]) == rects[where["box"]]
            frames, p = [], parent[where["box"]]
            while p != "root":
                frames.append(p)
                p = parent[p]
            assert where["frames"] == frames[::-1]
        for item in list(rects)[:40]:
            assert locate(arr, box=item)["box"] == item
    with pytest.raises(KeyError):
        locate(arr, node=len(vm.owner))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    folder = six_blocks_run(tmp_path_factory.mktemp("region") / "blocks")
    return TestClient(create_app([folder.parent]))


def test_server_answers_a_viewport_of_expand_all_and_locates_nodes(client):
    url = "/api/runs/blocks/graphs/0/layout"
    whole = client.post(url, json={"expand_all": True}).json()
    part = client.post(url, json={"expand_all": True, "min_size": 1e9}).json()
    assert all(b["parent"] == "root" for b in part["boxes"])
    assert part["total_boxes"] == whole["total_boxes"] > len(part["boxes"])
    assert part["key"] == whole["key"] and len(part["aggregates"]) >= 1
    box = whole["boxes"][len(whole["boxes"]) // 2]
    vp = f"{box['x'] - 1},{box['y'] - 1},2,2"
    near = client.get(url, params={"key": part["key"], "viewport": vp}).json()
    assert box in near["boxes"] and len(near["boxes"]) < len(whole["boxes"])
    loc = "/api/runs/blocks/graphs/0/locate"
    where = client.get(loc, params={"key": part["key"], "node": box["node"]}).json()
    assert (where["box"], where["x"], where["y"]) == (box["id"], box["x"], box["y"])
    first = client.get(loc, params={"node": box["node"]}).json()  # first screen: a group
    assert first["box"] == "r:s:model.blocks.0+6" and first["frames"] == [
        "s:model",
        "s:model.blocks",
    ]
    assert client.get(loc, params={"key": part["key"], "box": first["box"]}).json()["w"] > 0
    assert client.get(loc, params={"node": 10**6}).status_code == 404
    assert client.get(loc, params={"box": "s:nope"}).status_code == 404
    assert client.get(loc, params={"key": "kbad", "node": 1}).status_code == 404
    assert client.get(loc, params={}).status_code == 422
