"""Benchmark of the tpx-inspect server: the laid-out view of a 20,000-node graph collapsed by
scope, through the HTTP API (FastAPI TestClient, no network).

    python benchmarks/bench_server.py [--nodes N]     # or: python benchmarks/run.py server

The graph: ``--nodes`` recorded ops in 50 layers of 4 sub-blocks (scopes ``layerI.subJ``),
with a skip connection every block and a parameter used by every layer, so long edges exist.
Measured, best of 3 where cached: the graph list (which loads the trace, as the viewer does
before it opens a graph), the first answer of ``/view`` at the default state (folded at depth
1; collapse and layout computed), the same state again (served from the cache), one layer
expanded, and the fallback layout of the same states with Graphviz disabled.
Target (issue 7): the collapsed view answered in at most 2 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import tpx as tp
import tpx_inspect
from tpx_inspect.server import Settings, create_app

TARGET_SECONDS = 2.0


def make_graph_trace(folder: Path, nodes: int = 20_000) -> int:
    """Capture one graph of about ``nodes`` nodes in nested scopes; returns its node count."""
    per_block = max(1, nodes // 200 // 2)
    w = tp.asarray(np.full((4, 4), 0.01, np.float32), requires_grad=True)
    with tpx_inspect.capture("all", values="none", timing=False, params={"w": w}) as cap:
        h = tp.ones((4, 4), requires_grad=True)
        for layer in range(50):
            with tp.scope(f"layer{layer}"):
                h = h + w
                for sub in range(4):
                    with tp.scope(f"sub{sub}"):
                        skip = h
                        for _ in range(per_block):
                            h = (h * 0.5).tanh()
                        h = h + skip
        h.sum().backward()
    cap.save(str(folder / "trace.json"))
    return len(cap.trace.graphs[0].nodes)


def _timed(client: Any, url: str, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    r = client.get(url, params=params)
    elapsed = time.perf_counter() - start
    if r.status_code != 200:
        raise RuntimeError(f"{url} {params}: {r.status_code} {r.text[:200]}")
    return elapsed, r.json()


def measure(runs: Path, settings: Settings) -> dict[str, Any]:
    """Seconds for the collapsed view: first answer, cached answer, one layer expanded."""
    from fastapi.testclient import TestClient

    client = TestClient(create_app([runs], settings=settings))
    load, _ = _timed(client, "/api/runs/big/graphs", {})  # the viewer lists graphs first
    url = "/api/runs/big/graphs/0/view"
    first, view = _timed(client, url, {})
    cached = min(_timed(client, url, {})[0] for _ in range(3))
    expanded, opened = _timed(client, url, {"expand": ["layer7"]})
    return {
        "engine": view["engine"],
        "view_nodes": len(view["nodes"]),
        "view_edges": len(view["edges"]),
        "load_s": load,
        "first_s": first,
        "cached_s": cached,
        "expanded_s": expanded,
        "expanded_nodes": len(opened["nodes"]),
    }


def main() -> dict[str, Any]:
    """Run the benchmark and print one line per layout engine."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    args = parser.parse_args(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        (runs / "big").mkdir()
        start = time.perf_counter()
        n = make_graph_trace(runs / "big", args.nodes)
        print(f"graph: {n} nodes (captured and saved in {time.perf_counter() - start:.1f} s)")
        results = {"nodes": n}
        for name, settings in (("dot", Settings()), ("fallback", Settings(dot=None))):
            r = measure(runs, settings)
            ok = "ok" if r["first_s"] <= TARGET_SECONDS else "SLOWER THAN TARGET"
            print(
                f"{name:8s} engine={r['engine']:8s} view {r['view_nodes']} nodes/"
                f"{r['view_edges']} edges: first {r['first_s']:.3f} s ({ok}, target "
                f"{TARGET_SECONDS:g} s), cached {r['cached_s'] * 1e3:.1f} ms, one layer "
                f"expanded ({r['expanded_nodes']} nodes) {r['expanded_s']:.3f} s; trace load and "
                f"graph list before it {r['load_s']:.3f} s"
            )
            results[name] = r
    return results


if __name__ == "__main__":
    main()
