"""Background jobs: checks, diffs and exports run on a bounded pool, equal requests share one
run and its kept result, progress is reported, jobs can be cancelled."""

from __future__ import annotations

import threading
import time

import pytest

from tpx_inspect.server.jobs import Cancelled, JobPool


def _poll(client, job_id: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        info = client.get(f"/api/jobs/{job_id}").json()
        if info["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return info
        time.sleep(0.05)


def test_a_checks_job_gives_the_same_report_as_the_endpoint(client):
    r = client.post("/api/jobs/checks", params={"run": "scoped", "graph": 0})
    assert r.status_code == 202
    job = r.json()
    assert job["kind"] == "checks" and job["result"] == f"/api/jobs/{job['id']}/result"
    info = _poll(client, job["id"])
    assert info["status"] == "done" and info["progress"] == 1.0
    result = client.get(info["result"]).json()
    assert result == client.get("/api/runs/scoped/graphs/0/checks").json()
    again = client.post("/api/jobs/checks", params={"run": "scoped", "graph": 0}).json()
    assert again["id"] == job["id"]  # the kept result, not a second run


def test_diff_and_export_jobs(client):
    d = client.post("/api/jobs/diff", params={"run_a": "scoped", "graph_a": 0,
                                               "run_b": "scoped", "graph_b": 1}).json()  # fmt: skip
    assert _poll(client, d["id"])["status"] == "done"
    page = client.get(d["result"]).json()
    direct = client.get("/api/diff", params={"run_a": "scoped", "graph_a": 0,
                                             "run_b": "scoped", "graph_b": 1}).json()  # fmt: skip
    assert page == direct
    e = client.post("/api/jobs/export", params={"run": "scoped", "graph": 0, "format": "dot"})
    assert _poll(client, e.json()["id"])["status"] == "done"
    out = client.get(e.json()["result"])
    assert out.headers["content-type"].startswith("text/vnd.graphviz")
    assert out.content.startswith(b"digraph")


def test_unknown_jobs_and_runs(client):
    assert client.get("/api/jobs/j999999").status_code == 404
    assert client.delete("/api/jobs/j999999").status_code == 404
    assert client.post("/api/jobs/checks", params={"run": "nope", "graph": 0}).status_code == 404
    assert client.post("/api/jobs/checks", params={"run": "broken", "graph": 0}).status_code == 409


def test_equal_requests_share_one_run_and_the_pool_is_bounded():
    pool = JobPool(workers=2)
    running, peak, calls = [0], [0], []
    lock, gate = threading.Lock(), threading.Event()

    def work(key):
        def run(progress):
            with lock:
                calls.append(key)
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            gate.wait(10)
            with lock:
                running[0] -= 1
            return key

        return run

    jobs = [pool.submit(("k", i % 4), "demo", work(i % 4)) for i in range(12)]
    assert len({j.id for j in jobs}) == 4  # 12 requests, 4 distinct: 4 jobs
    time.sleep(0.2)
    gate.set()
    assert sorted(j.future.result(10) for j in jobs) == sorted(i % 4 for i in range(12))
    assert sorted(calls) == [0, 1, 2, 3] and peak[0] <= 2
    pool.shutdown()


def test_cancel_a_queued_and_a_running_job():
    pool = JobPool(workers=1)
    started, release = threading.Event(), threading.Event()

    def slow(progress):
        started.set()
        for k in range(100):
            release.wait(0.05)
            progress(k, 100)
        return "finished"

    running = pool.submit("slow", "demo", slow)
    queued = pool.submit("next", "demo", lambda progress: "never")
    assert started.wait(10)
    assert pool.cancel(queued.id).status == "cancelled"
    pool.cancel(running.id)
    with pytest.raises(Cancelled):
        running.future.result(10)
    assert running.status == "cancelled" and 0 <= running.progress < 1
    again = pool.submit("slow", "demo", lambda progress: "rerun")  # a cancelled job restarts
    assert again.id != running.id and again.future.result(10) == "rerun"
    pool.shutdown()


def test_eight_clients_asking_for_one_graphs_checks_share_one_run(runs_dir, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from fastapi.testclient import TestClient

    from tpx_inspect.server import create_app
    from tpx_inspect.server.routers import jobs as jobs_router

    calls = []
    real = jobs_router.run_graph_checks

    def counted(*args, **kwargs):
        calls.append(1)
        time.sleep(0.3)  # long enough for the eight requests to overlap
        return real(*args, **kwargs)

    monkeypatch.setattr(jobs_router, "run_graph_checks", counted)
    client = TestClient(create_app([runs_dir]))
    url = "/api/runs/scoped/graphs/1/checks"
    with ThreadPoolExecutor(8) as ex:
        answers = list(ex.map(lambda _: client.get(url), range(8)))
        light = client.get("/api/runs")  # answered meanwhile: not queued behind the checks
    assert light.status_code == 200
    assert [a.status_code for a in answers] == [200] * 8
    assert len({a.text for a in answers}) == 1 and len(calls) == 1
