"""End to end: ``tpx-inspect run examples/train_mlp.py --quick --serve`` as a subprocess on a
free port of 127.0.0.1; the served API is queried while and after the script runs, then the
process is stopped with Ctrl-C (SIGINT)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"serving (http://127\.0\.0\.1:\d+/)#run=(\S+)")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def _read_url(proc: subprocess.Popen, deadline: float) -> tuple[str, str]:
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = SERVING.search(line)
        if match:
            return match.group(1), match.group(2)
    raise AssertionError(f"no 'serving' line; output so far: {''.join(seen)}")


@pytest.mark.slow
def test_run_serve_end_to_end(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "tpx_inspect", "run", "examples/train_mlp.py", "--quick",
           "--serve", "--port", "0", "-o", str(tmp_path / "mlp")]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        base, run_id = _read_url(proc, deadline)
        assert run_id == "mlp"
        assert _get(f"{base}api/runs")[0]["id"] == "mlp"
        status = None
        while time.monotonic() < deadline:  # bounded: the quick run takes seconds
            feed = _get(f"{base}api/runs/mlp/feed?since=0&wait=5")
            status = feed["status"]
            if status != "running":
                break
        assert status == "ok", feed
        graphs = _get(f"{base}api/runs/mlp/graphs")
        assert graphs["page"]["total"] == feed["graphs"] >= 2
        view = _get(f"{base}api/runs/mlp/graphs/0/layout")  # the first screen
        scopes = [x for x in view["boxes"] + view["frames"] if x["kind"] == "scope"]
        assert view["boxes"] and scopes, "the model's scopes, as boxes or frames"
        last = max(b["node"] for b in view["boxes"] if b["kind"] in ("op", "loss"))
        node = _get(f"{base}api/runs/mlp/graphs/0/nodes/{last}")
        assert node["grad"] is not None
        # NOTE: the feed says "ok" when the script ends; the server reads the run from disk
        # once it is saved (and its view model kept beside it), a moment later
        while _get(f"{base}api/runs/mlp")["live"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _get(f"{base}api/runs/mlp")["live"] is False, "read from disk once saved"
        with urllib.request.urlopen(base, timeout=30) as r:
            assert r.headers["content-type"].startswith("text/html")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert proc.returncode == 0, out
    assert "graphs:" in out and (tmp_path / "mlp" / "trace.json").is_file()
