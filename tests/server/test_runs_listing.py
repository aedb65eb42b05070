"""GET /api/runs lists runs from their traces' headers (``format.read_header``): no trace is
loaded in full to be listed, and each run is listed as GET /api/runs/{id} describes it."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from fastapi.testclient import TestClient

from tpx_inspect.server import create_app
from tpx_inspect.server import store as store_module


def _no_full_load(*args, **kwargs):
    pytest.fail("listing the runs loaded a trace in full")


def test_listing_reads_headers_only_and_answers_as_each_run_does(runs_dir, monkeypatch):
    client = TestClient(create_app([runs_dir]))
    with monkeypatch.context() as m:
        m.setattr(store_module, "load", _no_full_load)
        listed = client.get("/api/runs").json()
        assert client.get("/api/runs").json() == listed  # and again, from the cache
    assert {r["id"] for r in listed} == {"broken", "nan", "scoped"}
    for run in listed:  # NOTE: GET /api/runs/{id} loads the trace in full
        assert client.get(f"/api/runs/{run['id']}").json() == run
    assert client.get("/api/runs").json() == listed


def test_damage_past_the_header_shows_once_the_run_is_opened(runs_dir, tmp_path):
    shutil.copytree(runs_dir / "scoped", tmp_path / "served" / "damaged")
    folder = tmp_path / "served" / "damaged"
    doc = json.loads((folder / "trace.json").read_text())
    doc["runs"][0]["structures"][0]["nodes"]["kind"]["values"][1] = "node"  # not a node kind
    (folder / "trace.json").write_text(json.dumps(doc))
    client = TestClient(create_app([tmp_path / "served"]))
    assert client.get("/api/runs").json()[0]["status"] == "ok"  # the header is fine
    opened = client.get("/api/runs/damaged").json()
    assert opened["status"] == "unreadable" and "kind" in opened["error"]
    assert client.get("/api/runs").json() == [opened]


def test_a_rewritten_trace_is_listed_anew(runs_dir, tmp_path):
    folder = tmp_path / "served" / "nan"
    shutil.copytree(runs_dir / "nan", folder)
    client = TestClient(create_app([tmp_path / "served"]))
    assert client.get("/api/runs").json()[0]["graphs"] == 1
    doc = json.loads((folder / "trace.json").read_text())
    doc["runs"][0]["graphs"].append({**doc["runs"][0]["graphs"][0], "id": 1, "step": 1})
    doc["runs"][0]["steps"] = 2
    blob = (folder / "trace.npz").read_bytes()
    assert doc["sidecar"]["sha256"] == hashlib.sha256(blob).hexdigest()
    (folder / "trace.json").write_text(json.dumps(doc, indent=1))
    listed = client.get("/api/runs").json()[0]
    assert (listed["graphs"], listed["steps"]) == (2, 2)
    assert client.get("/api/runs/nan").json() == listed


def test_a_run_without_its_sidecar_is_listed_unreadable(runs_dir, tmp_path):
    folder = tmp_path / "served" / "alone"
    folder.mkdir(parents=True)
    shutil.copy(runs_dir / "nan" / "trace.json", folder / "trace.json")  # not its .npz
    client = TestClient(create_app([tmp_path / "served"]))
    listed = client.get("/api/runs").json()[0]
    assert listed["status"] == "unreadable" and "sidecar" in listed["error"]
    assert client.get("/api/runs/alone").json() == listed
