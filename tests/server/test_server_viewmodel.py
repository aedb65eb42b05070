"""The view-model endpoints: tree, layout (state in the body, short keys, viewport and level of
detail), records on demand, search, colour statistics, heatmaps, histograms, saved values."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.helpers.vm_runs import six_blocks_run
from tpx_inspect.server import create_app

G = "/api/runs/{run}/graphs/0"


@pytest.fixture(scope="module")
def vm_client(runs_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    folder = six_blocks_run(tmp_path_factory.mktemp("vm") / "blocks", values="all")
    return TestClient(create_app([runs_dir, folder.parent]))


def test_tree_lists_groups_with_stable_ids(vm_client):
    doc = vm_client.get(G.format(run="blocks") + "/tree").json()
    groups = {g["id"]: g for g in doc["groups"]}
    rep = groups["r:s:model.blocks.0+6"]
    assert rep["kind"] == "repeat" and rep["count"] == 6 and len(rep["children"]) == 6
    assert doc["default_expanded"][0] == "root" and doc["nodes"] == 20
    assert vm_client.get(G.format(run="blocks") + "/tree").json() == doc


def test_layout_state_in_the_body_and_a_short_key(vm_client):
    url = G.format(run="blocks") + "/layout"
    first = vm_client.post(url, json={}).json()
    assert any(b["id"] == "r:s:model.blocks.0+6" and b["count"] == 6 for b in first["boxes"])
    opened = vm_client.post(url, json={"expanded": [*first["expanded"], "r:s:model.blocks.0+6",
                                                    "nope"]}).json()  # fmt: skip
    assert opened["unknown"] == ["nope"] and len(opened["boxes"]) > len(first["boxes"])
    assert {f["id"] for f in opened["frames"]} >= {"s:model", "r:s:model.blocks.0+6"}
    again = vm_client.get(url, params={"key": opened["key"]}).json()
    assert again["boxes"] == opened["boxes"] and again["cached"]
    assert vm_client.get(url, params={"key": "kdeadbeef"}).status_code == 404
    every = vm_client.post(url, json={"expand_all": True}).json()
    assert {b["node"] for b in every["boxes"] if b["kind"] != "stub"} == set(range(20))
    some = vm_client.post(url, json={"expand_all": True, "min_size": 10**6}).json()
    assert some["aggregates"] and len(some["boxes"]) < len(every["boxes"])
    vp = {"x": 0, "y": 0, "w": every["width"], "h": every["height"] / 4}
    part = vm_client.post(url, json={"expand_all": True, "viewport": vp}).json()
    assert 0 < len(part["boxes"]) < len(every["boxes"]) and part["total_boxes"] == len(
        every["boxes"]
    )


def test_records_search_and_colours(vm_client):
    base = G.format(run="blocks")
    rec = vm_client.post(base + "/records", json={"ids": [2, 3], "fields": ["op", "group"]})
    assert rec.json() == {"ids": [2, 3], "op": ["matmul", "tanh"],
                          "group": ["s:model.blocks.0", "s:model.blocks.0"]}  # fmt: skip
    assert vm_client.post(base + "/records", json={"ids": [99]}).status_code == 404
    key = vm_client.post(base + "/layout", json={}).json()["key"]
    hits = vm_client.get(base + "/search", params={"q": "op:tanh", "key": key}).json()
    assert hits["total"] == 6 and hits["boxes"] == {"r:s:model.blocks.0+6": 6}
    col = vm_client.get(base + "/colours", params={"metric": "grad_norm", "key": key}).json()
    assert col["unit"] and col["max"] >= col["min"] > 0 and "r:s:model.blocks.0+6" in col["boxes"]
    assert vm_client.get(base + "/colours", params={"metric": "bogus"}).status_code == 422


def test_heatmap_histogram_and_saved_values(vm_client, client):
    base = G.format(run="blocks")
    heat = vm_client.get(base + "/nodes/2/heatmap", params={"which": "output", "max": 2}).json()
    assert heat["shape"] == [2, 4] and heat["block"] == [1, 2] and heat["downsampled"]
    hist = vm_client.get(base + "/nodes/2/histogram", params={"which": "grad", "bins": 5})
    assert sum(hist.json()["counts"]) == 8
    saved = vm_client.get(base + "/nodes/2/saved").json()
    assert saved and all(s["has_value"] for s in saved) and "summary" in saved[0]
    s0 = vm_client.get(base + "/nodes/2/heatmap", params={"which": "saved.0"})
    assert s0.status_code == 200
    assert vm_client.get(base + "/nodes/2/heatmap", params={"which": "input.9"}).status_code == 409
    assert vm_client.get(base + "/nodes/999/heatmap").status_code == 404
    assert vm_client.get(base + "/nodes/2/heatmap", params={"which": "x"}).status_code == 422
