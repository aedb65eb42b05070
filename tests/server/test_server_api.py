"""Every endpoint of the HTTP API through FastAPI's TestClient, with its errors."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tpx_inspect.export.render import graphviz_available
from tpx_inspect.format import load
from tpx_inspect.records import Trace
from tpx_inspect.server import create_app

G0 = "/api/runs/scoped/graphs/0"


def test_runs_list_every_run_with_its_status(client):
    runs = {r["id"]: r for r in client.get("/api/runs").json()}
    assert set(runs) == {"broken", "nan", "scoped"}
    assert runs["scoped"]["status"] == "ok" and runs["scoped"]["graphs"] == 2
    assert runs["broken"]["status"] == "unreadable" and "broken" in runs["broken"]["error"]
    assert not runs["scoped"]["live"]


def test_one_run_and_its_errors(client):
    assert client.get("/api/runs/nan").json()["graphs"] == 1
    assert client.get("/api/runs/nope").status_code == 404
    assert client.get("/api/runs/nope").json() == {"detail": "unknown run 'nope'"}
    assert client.get("/api/runs/-bad").status_code == 422
    assert client.get("/api/runs/..%2F..%2Fetc").status_code in (404, 422)


def test_graphs_of_a_run_are_paginated(client):
    page = client.get("/api/runs/scoped/graphs", params={"limit": 1, "offset": 1}).json()
    assert page["page"] == {"offset": 1, "limit": 1, "total": 2}
    assert [g["id"] for g in page["graphs"]] == [1]
    first = client.get("/api/runs/scoped/graphs").json()["graphs"][0]
    edges = (first["nodes"], first["edges"], first["finite"], first["kind"])
    assert edges == (8, 8, True, "backward"), "h * h counts two edges"
    assert client.get("/api/runs/scoped/graphs", params={"limit": 0}).status_code == 422
    assert client.get("/api/runs/scoped/graphs", params={"offset": -1}).status_code == 422


def test_an_unreadable_trace_is_a_409_with_its_reason(client):
    r = client.get("/api/runs/broken/graphs")
    assert r.status_code == 409 and "broken" in r.json()["detail"]


def test_graph_summary_and_unknown_graph(client):
    assert client.get(G0).json()["roots"] == [7]
    nan = client.get("/api/runs/nan/graphs/0").json()
    assert not nan["finite"] and nan["nonfinite_nodes"] > 0
    assert client.get("/api/runs/scoped/graphs/2").status_code == 404
    assert client.get("/api/runs/scoped/graphs/-1").status_code == 422
    assert client.get("/api/runs/scoped/graphs/x").status_code == 422


def _labels(view: dict) -> list[str]:
    return sorted(n["label"].split("\n")[0] for n in view["boxes"])


def _layout(client, **body) -> dict:
    r = client.post(f"{G0}/layout", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_layout_folds_scopes_and_expands_on_request(client):
    view = _layout(client, expanded=["root"])
    assert _labels(view) == ["enc (6)", "head (2)"], "parameters sit inside their scope"
    groups = {g["id"] for g in client.get(f"{G0}/tree").json()["groups"]}
    assert groups == {"root", "s:enc", "s:enc.fc1", "s:enc.fc2", "s:head"}
    opened = _layout(client, expanded=["root", "s:enc"])
    assert _labels(opened) == ["fc1 (3)", "fc2 (3)", "head (2)"]
    assert [f["id"] for f in opened["frames"]] == ["s:enc"], "an open scope is a frame"
    deep = _layout(client, expanded=["root", "s:enc", "s:enc.fc1"])
    assert "matmul" in _labels(deep) and deep["expanded"] == ["root", "s:enc", "s:enc.fc1"]
    flat = _layout(client, expand_all=True)
    assert sorted(b["node"] for b in flat["boxes"] if b["kind"] != "stub") == list(range(8))
    assert not {b["kind"] for b in flat["boxes"]} & {"scope", "repeat", "loop", "params"}


def test_layout_is_top_down_with_edge_polylines(client):
    view = _layout(client, expand_all=True)
    y = {b["node"]: b["y"] for b in view["boxes"] if b["kind"] != "stub"}
    assert y[0] < y[1] < y[7], "inputs above their consumers, the loss at the bottom"
    assert view["edges"] and all(len(e["points"]) >= 2 for e in view["edges"])
    assert all(b["w"] > 0 and b["h"] > 0 for b in view["boxes"])


def test_layout_is_cached_per_expansion_state(client):
    body = {"expanded": ["root", "s:head"]}
    assert not _layout(client, **body)["cached"]
    again = _layout(client, **body)
    assert (
        again["cached"]
        and client.get(f"{G0}/layout", params={"key": again["key"]}).json()["cached"]
    )
    assert not _layout(client, expanded=["root", "s:enc.fc2", "s:enc"])["cached"]


def test_layout_errors(client):
    assert _layout(client, expanded=["root", "nope"])["unknown"] == ["nope"]
    assert client.post(f"{G0}/layout", json={"depth": -1}).status_code == 422
    assert client.post(f"{G0}/layout", json={"expanded": "root"}).status_code == 422
    assert client.post("/api/runs/scoped/graphs/9/layout", json={}).status_code == 404
    assert client.get(f"{G0}/view").status_code == 404, "the old folded view is gone"


def test_an_edge_into_an_open_frame_goes_through_one_stub(client):
    view = _layout(client, expanded=["root", "s:enc", "s:enc.fc2"])
    stubs = [b for b in view["boxes"] if b["kind"] == "stub"]
    assert stubs and all(b["label"].startswith("from ") for b in stubs)
    ids = {b["id"] for b in view["boxes"]}
    assert all(b["link"] in ids for b in stubs), "linked to its source box"
    assert all(b.get("node") == int(b["link"][1:]) for b in stubs if b["link"].startswith("n"))


def test_nodes_are_listed_filtered_and_paginated(client):
    everything = client.get(f"{G0}/nodes").json()
    assert [n["id"] for n in everything["nodes"]] == list(range(8))
    assert [
        n["title"] for n in client.get(f"{G0}/nodes", params={"op": "matmul"}).json()["nodes"]
    ] == [
        "matmul",
        "matmul",
    ]
    assert client.get(f"{G0}/nodes", params={"scope": "enc"}).json()["page"]["total"] == 4
    assert client.get(f"{G0}/nodes", params={"kind": "param"}).json()["page"]["total"] == 2
    assert client.get(f"{G0}/nodes", params={"limit": 3}).json()["page"] == {
        "offset": 0, "limit": 3, "total": 8,
    }  # fmt: skip
    assert client.get(f"{G0}/nodes", params={"kind": "tensor"}).status_code == 422


def test_node_detail_has_values_and_gradients(client):
    detail = client.get(f"{G0}/nodes/1").json()
    assert detail["node"]["title"] == "matmul" and detail["node"]["scope"] == "enc.fc1"
    assert detail["consumers"] == [2]
    assert detail["values"]["output"]["shape"] == [2, 3]
    assert detail["values"]["output"]["data"][:3] == [3.5, 0.0, -0.75]
    assert detail["grad"]["shape"] == [2, 3] and detail["node"]["grad_norm"] is not None
    cut = client.get(f"{G0}/nodes/1", params={"limit": 2, "offset": 1}).json()["values"]["output"]
    assert cut["data"] == [0.0, -0.75] and cut["truncated"] and cut["total"] == 6
    assert client.get(f"{G0}/nodes/8").status_code == 404
    assert client.get(f"{G0}/nodes/1", params={"limit": -1}).status_code == 422


def test_nan_values_are_json_safe_strings(client):
    detail = client.get("/api/runs/nan/graphs/0/nodes/1").json()
    assert detail["node"]["nonfinite"] and detail["output"]["nan"] == 1
    assert "nan" in detail["values"]["output"]["data"]


def test_backward_order(client, runs_dir):
    graph = load(str(runs_dir / "scoped" / "trace.json")).graphs[0]
    order = client.get(f"{G0}/backward").json()
    assert [n["id"] for n in order["nodes"]] == list(graph.order)
    assert [n["order"] for n in order["nodes"]] == list(range(len(graph.order)))
    assert client.get(f"{G0}/backward", params={"limit": 2}).json()["page"]["total"] == 8


def test_checks_pass_on_a_correct_graph_and_flag_the_nan(client):
    good = client.get(f"{G0}/checks").json()
    assert good["ok"], good
    assert [c["name"] for c in good["checks"]] == [
        "local",
        "accumulation",
        "kernel",
        "order",
        "nonfinite",
    ]
    bad = client.get("/api/runs/nan/graphs/0/checks", params={"check": ["nonfinite"]}).json()
    assert not bad["ok"] and bad["checks"][0]["status"] == "fail"
    assert bad["checks"][0]["findings"][0]["node"] == 1
    assert client.get(f"{G0}/checks", params={"check": ["nope"]}).status_code == 422


@pytest.mark.parametrize("fmt", ["dot", "json", "model-explorer", "html", "svg", "png", "pdf"])
def test_exports(client, fmt):
    if fmt in ("svg", "png", "pdf") and not graphviz_available():
        pytest.skip("Graphviz binaries not installed")
    r = client.get(f"{G0}/export", params={"format": fmt})
    assert r.status_code == 200, r.text
    head = {"dot": b"digraph", "svg": b"<?xml", "png": b"\x89PNG", "pdf": b"%PDF",
            "html": b"<!DOCTYPE html>", "json": b"{", "model-explorer": b"{"}[fmt]  # fmt: skip
    assert r.content.startswith(head)
    if fmt == "json":
        assert len(json.loads(r.content)["runs"][0]["graphs"]) == 1


def test_export_errors(client):
    assert client.get(f"{G0}/export", params={"format": "gif"}).status_code == 422
    assert client.get("/api/runs/scoped/graphs/5/export").status_code == 404


def test_diff_of_two_graphs(client):
    q = {"run_a": "scoped", "graph_a": 0, "run_b": "scoped", "graph_b": 1}
    d = client.get("/api/diff", params=q).json()
    assert d["same_structure"] and d["added"] == d["removed"] == 0
    assert d["changed"] > 0 and d["max_output_diff"] > 0
    same = client.get("/api/diff", params={**q, "graph_b": 0}).json()
    assert same["changed"] == 0 and same["nodes"] == []
    other = client.get("/api/diff", params={**q, "run_b": "nan", "graph_b": 0}).json()
    assert other["added"] + other["removed"] > 0 and not other["same_structure"]
    assert client.get("/api/diff", params={**q, "run_b": "nope"}).status_code == 404
    assert client.get("/api/diff", params={"run_a": "scoped"}).status_code == 422


def test_feed_long_polling_and_events(client):
    feed = client.get("/api/runs/scoped/feed").json()
    assert (feed["graphs"], len(feed["new"]), feed["status"]) == (2, 2, "ok")
    assert client.get("/api/runs/scoped/feed", params={"since": 2}).json()["new"] == []
    assert client.get("/api/runs/scoped/feed", params={"wait": 31}).status_code == 422
    text = client.get("/api/runs/scoped/events", params={"since": 1}).text
    assert text.count("event: graph") == 1 and "event: status" in text
    assert client.get("/api/runs/nope/events").status_code == 404


class _GrowingCapture:
    """A stand-in for a live capture: its trace grows by one graph per read."""

    def __init__(self, trace: Trace) -> None:
        self.full, self.reads = trace, 0

    @property
    def trace(self) -> Trace:
        import dataclasses

        self.reads += 1
        run = self.full.runs[0]
        n = min(self.reads // 3, len(run.graphs))
        status = "running" if n < len(run.graphs) else "ok"
        part = dataclasses.replace(run, graphs=run.graphs[:n], status=status)
        return dataclasses.replace(self.full, runs=(part,))


def test_live_run_feed_reports_new_graphs(runs_dir):
    from tpx_inspect.server import RunStore

    store = RunStore([])
    live = store.add_live(
        "live run", _GrowingCapture(load(str(runs_dir / "scoped" / "trace.json")))
    )
    c = TestClient(create_app(store=store))
    assert live.id == "live_run" and c.get("/api/runs/live_run").json()["live"]
    feed = c.get("/api/runs/live_run/feed", params={"since": 0, "wait": 30}).json()
    assert feed["new"], "long polling returns once a graph arrives"
    text = c.get("/api/runs/live_run/events", params={"timeout": 30}).text
    assert text.count("event: graph") == 2 and '"status": "ok"' in text


def test_viewer_docs_and_openapi(client, tmp_path):
    assert client.get("/").headers["content-type"].startswith("text/html")
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert "/api/runs/{run_id}/graphs/{graph_id}/layout" in paths
    assert "/api/runs/{run_id}/graphs/{graph_id}/view" not in paths
    bare = TestClient(create_app([], web_dir=tmp_path))
    assert "viewer is not installed" in bare.get("/").text


def test_cors_is_off_by_default(client, runs_dir):
    origin = {"Origin": "http://example.test"}
    assert "access-control-allow-origin" not in client.get("/api/runs", headers=origin).headers
    on = TestClient(create_app([runs_dir], cors_origins=["http://example.test"]))
    assert (
        on.get("/api/runs", headers=origin).headers["access-control-allow-origin"]
        == "http://example.test"
    )


def test_ids_are_never_paths(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "trace.json").write_text("{}")
    c = TestClient(create_app([tmp_path / "runs"]))
    assert c.get("/api/runs/secret").status_code == 404
    assert c.get("/api/runs/..%2Fsecret").status_code in (404, 422)
