"""The view model kept beside its trace (tpx_inspect.viewmodel.persist): it reads back equal to
a fresh build; a changed trace, a bumped view-model version, a damaged file or a tree that does
not check out are ignored (with a log line) and rebuilt, never trusted; a fresh server shows
the first frame from it without reading the trace, and writes it on first open."""

from __future__ import annotations

import io
import logging
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

import tpx_inspect
from tests.inspect.test_viewmodel import blocks_graph, scalar_mlp_graph
from tests.inspect.test_viewmodel_index import random_states
from tpx_inspect import _json
from tpx_inspect.records import Run, Trace
from tpx_inspect.server import create_app
from tpx_inspect.viewmodel import build, layout, persist
from tpx_inspect.viewmodel._index import index_of
from tpx_inspect.viewmodel.wire import layout_json, search


def trace_of(graph) -> Trace:
    """A trace holding ``graph`` alone."""
    return Trace(1, (Run(0, "test", "ok", 1, {}, (graph,)),))


def saved(folder: Path, graph) -> Path:
    """A trace holding ``graph`` saved as ``folder/trace.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "trace.json"
    tpx_inspect.save(trace_of(graph), str(path))
    return path


@pytest.fixture
def kept(tmp_path: Path) -> tuple[Path, object]:
    g = blocks_graph(blocks=5)
    path = saved(tmp_path / "run", g)
    assert persist.write(path, {0: build(g)})
    return path, tpx_inspect.load(str(path)).graphs[0]


def test_kept_model_reads_back_equal_to_a_fresh_build(kept):
    path, g = kept
    fresh, back = build(g), persist.read(path, 0, g)
    assert back is not None
    assert back.groups == fresh.groups and back.owner == fresh.owner
    assert back.default_expanded == fresh.default_expanded
    exp = sorted(set(fresh.default_expanded) | {"root"})
    first = persist.first_screen(path, 0)
    assert first == _json.loads(
        _json.dumps({"expanded": exp, "expand_all": False, **layout_json(layout(fresh, exp))})
    )
    assert persist.read(path, 1, g) is None and persist.first_screen(path, 1) is None


def test_a_changed_trace_is_not_shown_the_old_grouping(kept, caplog):
    path, _ = kept
    other = scalar_mlp_graph(batch=3)
    tpx_inspect.save(trace_of(other), str(path))  # same file, new trace
    with caplog.at_level(logging.INFO, "tpx_inspect.viewmodel"):
        assert persist.read(path, 0, other) is None and persist.first_screen(path, 0) is None
    assert "another trace" in caplog.text


def test_a_bumped_view_model_version_rebuilds(kept, monkeypatch, caplog):
    path, g = kept
    monkeypatch.setattr(persist, "VERSION", persist.VERSION + 1)
    with caplog.at_level(logging.INFO, "tpx_inspect.viewmodel"):
        assert persist.read(path, 0, g) is None
    assert "another view-model version" in caplog.text


def _rewrite(path: Path, change) -> None:
    """Rewrite the sidecar's entries through ``change(dict of name -> document)``."""
    side = persist.sidecar_path(path)
    with np.load(side) as z:
        arrays = {k: z[k] for k in z.files}
    docs = {k: _json.loads(bytes(a)) for k, a in arrays.items() if a.dtype == np.uint8}
    change(docs)
    arrays |= {k: np.frombuffer(_json.dumps(d), np.uint8) for k, d in docs.items()}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    side.write_bytes(buf.getvalue())


def _twice(docs: dict) -> None:
    rows = docs["g0.tree"]["groups"]
    rows[0][5] = [*rows[0][5], rows[-1][5][0]]  # the last group's first node listed twice


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: persist.sidecar_path(p).write_bytes(b"PK\x03\x04 not a zip"),
        lambda p: persist.sidecar_path(p).write_bytes(persist.sidecar_path(p).read_bytes()[:-40]),
        lambda p: np.savez(persist.sidecar_path(p), meta=np.array([{"a": 1}], dtype=object)),
        lambda p: _rewrite(p, _twice),
        lambda p: _rewrite(p, lambda d: d["g0.tree"]["groups"].reverse()),
        lambda p: _rewrite(p, lambda d: d["g0.tree"].update(nodes=3)),
    ],
    ids=["not-a-zip", "truncated", "pickled-object", "node-twice", "children-first", "count"],
)
def test_a_damaged_or_inconsistent_sidecar_is_ignored_with_a_log_line(kept, damage, caplog):
    path, g = kept
    damage(path)
    with caplog.at_level(logging.INFO, "tpx_inspect.viewmodel"):
        assert persist.read(path, 0, g) is None and persist.kept(path, 0) is None
    assert "ignored" in caplog.text


def test_kept_search_and_boxes_answer_as_the_model_does(kept):
    path, g = kept
    vm, light = build(g), persist.kept(path, 0)
    ix = index_of(vm)
    for state in random_states(vm, random.Random(4), 4):
        for q in ("tanh", "op:matmul", "scope:blocks.2", "param", "nothing"):
            hits = search(vm, q)
            assert light.search(q) == hits, q
            assert light.boxes(state, hits[::-1])[::-1] == ix.boxes(
                ix.shown(state), np.asarray(hits, np.int64)
            ), q


def test_keep_writes_big_graphs_models_and_a_failing_build_only_logs(tmp_path, monkeypatch):
    monkeypatch.setattr(persist, "SAVE_NODES", 10)
    g = blocks_graph(blocks=3)
    trace = trace_of(g)
    path = saved(tmp_path / "a", g)
    assert not persist.sidecar_path(path).exists(), "saving alone writes no view model"
    assert persist.keep(path, trace) and persist.read(path, 0, g) is not None
    monkeypatch.setattr(persist, "SAVE_NODES", 10**6)
    assert not persist.keep(saved(tmp_path / "b", g), trace)

    def broken(graph):
        raise RuntimeError("a bug in the view model")

    monkeypatch.setattr(persist, "SAVE_NODES", 10)
    monkeypatch.setattr("tpx_inspect.viewmodel.tree.build", broken)
    other = saved(tmp_path / "c", g)
    assert not persist.keep(other, trace) and not persist.sidecar_path(other).exists()


def test_a_fresh_server_shows_the_first_frame_without_reading_the_trace(tmp_path, monkeypatch):
    monkeypatch.setattr(persist, "MIN_NODES", 10)
    monkeypatch.setattr(sys.modules["tpx_inspect.viewmodel.layout"], "WARM_COPIES", 2)  # keep x6
    path = saved(tmp_path / "runs" / "blocks", blocks_graph(blocks=6))
    url = "/api/runs/blocks/graphs/0/layout"
    first = TestClient(create_app([tmp_path / "runs"])).post(url, json={}).json()  # writes it
    assert persist.sidecar_path(path).is_file()

    read: list[str] = []
    import tpx_inspect.server.store as store

    monkeypatch.setattr(store, "load", lambda p: read.append(p) or tpx_inspect.load(p))
    monkeypatch.setattr("tpx_inspect.server.cold._warm", lambda *a: None)
    client = TestClient(create_app([tmp_path / "runs"]))
    again = client.post(url, json={}).json()
    assert read == []
    for doc in (first, again):
        doc.pop("cached"), doc.pop("seconds")
    assert again == first
    rep = next(b["id"] for b in again["boxes"] if b["kind"] == "repeat")
    opened = client.post(url, json={"expanded": [rep, *again["expanded"]]}).json()
    assert read == [] and opened["cached"] and len(opened["boxes"]) > len(again["boxes"])
    found = client.get(url.replace("/layout", "/search"), params={"q": "tanh"}).json()
    assert read == [] and found["total"] > 0  # searched in the fields kept beside the trace
    key = client.get(url, params={"key": again["key"]}).json()  # the key names a real state
    assert read and key["boxes"] == again["boxes"]
    built = client.post(url, json={"expanded": [rep, *again["expanded"]]}).json()
    for doc in (opened, built):
        doc.pop("seconds"), doc.pop("cached")
    assert built == opened, "the kept answer of an opened repeat is the model's"
    assert client.get(url.replace("/layout", "/search"), params={"q": "tanh"}).json() == found


def test_a_server_never_shows_a_stale_first_frame(tmp_path, monkeypatch):
    monkeypatch.setattr(persist, "MIN_NODES", 10)
    path = saved(tmp_path / "runs" / "run", blocks_graph(blocks=6))
    url = "/api/runs/run/graphs/0/layout"
    TestClient(create_app([tmp_path / "runs"])).post(url, json={})
    other = scalar_mlp_graph(batch=3)
    tpx_inspect.save(trace_of(other), str(path))
    doc = TestClient(create_app([tmp_path / "runs"])).post(url, json={}).json()
    fresh = build(other)
    assert (
        doc["boxes"]
        == _json.loads(_json.dumps(layout_json(layout(fresh, doc["expanded"]))))["boxes"]
    )
