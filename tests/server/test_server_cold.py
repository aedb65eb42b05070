"""A run written by ``tpx-inspect run`` opened by a fresh server (the "cold" open): the run
keeps its view model and graph list beside its trace, so the server lists its graphs and
shows the first frame without reading the trace, answering what a server that read it does."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

import tpx as tp
import tpx_inspect
from tpx_inspect.cli import cli
from tpx_inspect.server import create_app
from tpx_inspect.viewmodel import persist
from tpx_inspect.viewmodel.listing import listing

SCRIPT = """
import tpx as tp
tp.manual_seed(0)
x = tp.randn((2, 4), requires_grad=True)
ws = [tp.randn((4, 4), requires_grad=True) for _ in range(6)]
for step in range(2):
    h = x
    for b in range(6):
        with tp.scope(f"model.blocks.{b}"):
            h = (h @ ws[b]).tanh().tanh()
    (h.sum() * (step + 1)).backward()
"""


@pytest.fixture
def run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A two-graph run written by ``tpx-inspect run`` (its graphs count as big here)."""
    monkeypatch.setattr(persist, "SAVE_NODES", 10)
    monkeypatch.setattr(persist, "MIN_NODES", 10)
    script = tmp_path / "blocks.py"
    script.write_text(SCRIPT)
    out = tmp_path / "runs" / "blocks"
    result = CliRunner().invoke(cli, ["run", str(script), "-o", str(out), "--policy", "all"])
    assert result.exit_code == 0, result.output
    return out


def _counting_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import tpx_inspect.server.store as store

    read: list[str] = []
    monkeypatch.setattr(store, "load", lambda p: read.append(p) or tpx_inspect.load(p))
    monkeypatch.setattr("tpx_inspect.server.cold._warm", lambda *a: None)
    return read


def test_tpx_inspect_run_keeps_the_view_model_and_graph_list(run_folder: Path):
    trace_file = run_folder / "trace.json"
    assert persist.sidecar_path(trace_file).is_file()
    trace = tpx_inspect.load(str(trace_file))
    assert persist.graph_list(trace_file) == listing(trace)
    assert persist.read(trace_file, 0, trace.graphs[0]) is not None


def test_a_fresh_server_lists_and_draws_a_run_without_reading_its_trace(run_folder, monkeypatch):
    read = _counting_loads(monkeypatch)
    client = TestClient(create_app([run_folder.parent]))
    cold = client.get("/api/runs/blocks/graphs").json()
    first = client.post("/api/runs/blocks/graphs/0/layout", json={}).json()
    assert read == [], "listed and drawn from beside the trace"
    assert [g["id"] for g in cold["graphs"]] == [0, 1] and first["boxes"]
    # the same list as a server that reads the trace, page by page
    client.get("/api/runs/blocks/graphs/0/nodes", params={"limit": 1})
    assert read, "the trace is read for node records"
    assert client.get("/api/runs/blocks/graphs").json() == cold
    for offset in (0, 1):
        params = {"offset": offset, "limit": 1}
        warm = client.get("/api/runs/blocks/graphs", params=params).json()
        again = TestClient(create_app([run_folder.parent])).get(
            "/api/runs/blocks/graphs", params=params
        )
        assert again.json() == warm and warm["page"]["total"] == 2


def test_a_changed_trace_is_listed_from_the_trace_not_the_kept_list(run_folder, monkeypatch):
    trace_file = run_folder / "trace.json"
    with tpx_inspect.capture() as cap:
        x = tp.ones(3, requires_grad=True)
        (x * 2).sum().backward()
    tpx_inspect.save(cap.trace, str(trace_file))  # the same file, a new trace: 1 graph
    read = _counting_loads(monkeypatch)
    listed = TestClient(create_app([run_folder.parent])).get("/api/runs/blocks/graphs").json()
    assert read and listed["page"]["total"] == 1 and listed["graphs"][0]["nodes"] == 3


def test_search_is_answered_from_beside_the_trace_until_the_model_is_made(run_folder, monkeypatch):
    read = _counting_loads(monkeypatch)
    app = create_app([run_folder.parent])
    client = TestClient(app)
    url = "/api/runs/blocks/graphs/0"
    client.get(f"{url}/nodes", params={"limit": 1})  # the trace is read; no model is made
    assert read and not app.state.vm_models.has("blocks", 0)
    kept = client.get(f"{url}/search", params={"q": "tanh"}).json()
    assert not app.state.vm_models.has("blocks", 0), "answered without making the model"
    client.get(f"{url}/tree")  # the model made
    assert app.state.vm_models.has("blocks", 0)
    assert client.get(f"{url}/search", params={"q": "tanh"}).json() == kept
    assert kept["total"] == 12


def test_the_background_read_waits_for_a_quiet_server(run_folder, monkeypatch):
    import threading
    import time

    import tpx_inspect.server.store as store
    from tpx_inspect.server import cold

    read: list[str] = []
    monkeypatch.setattr(store, "load", lambda p: read.append(p) or tpx_inspect.load(p))
    monkeypatch.setattr(cold, "WARM_QUIET", 0.05)
    app = create_app([run_folder.parent])
    app.state.activity.begin()  # a request in flight
    worker = threading.Thread(target=cold._warm, args=(app, "blocks", 0))
    worker.start()
    time.sleep(0.3)
    assert read == [], "the trace is not read while a request runs"
    app.state.activity.end()
    worker.join(10)
    assert read and app.state.vm_models.has("blocks", 0)


def test_serve_links_a_single_run_s_first_graph(run_folder, monkeypatch):
    import tpx_inspect.server.serve as serve_mod

    monkeypatch.setattr(serve_mod, "serve_forever", lambda app, sock: sock.close())
    one = CliRunner().invoke(cli, ["serve", str(run_folder), "--port", "0"])
    assert one.exit_code == 0 and "/#run=blocks&graph=0 (1 runs)" in one.output, one.output
    (run_folder.parent / "other").mkdir()
    tpx_inspect.save(tpx_inspect.load(str(run_folder / "trace.json")),
                     str(run_folder.parent / "other" / "trace.json"))  # fmt: skip
    two = CliRunner().invoke(cli, ["serve", str(run_folder.parent), "--port", "0"])
    assert two.exit_code == 0 and "#run=" not in two.output, two.output
