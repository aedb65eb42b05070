"""Benchmarks of tpx_inspect: capture overhead on the MLP training loop, save/load of a
100,000-node graph, DOT export of it.

    python benchmarks/bench_inspect.py          # or: python benchmarks/run.py inspect

Targets (issue 5): capture with the default policy <= 1.3x the uncaptured loop; save and load
of a 100,000-node graph <= 2 s each.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import tpx as tp  # noqa: E402
import tpx_inspect  # noqa: E402
from tpx_inspect.export import to_dot  # noqa: E402

STEPS = 200


def mlp_loop() -> tuple[Callable[[int], None], Any]:
    """``run(steps)`` of the MLP training example (examples/train_mlp.py), and its params."""
    from train_mlp import batches, build_model

    import tpx.nn.functional as F
    import tpx.optim as optim

    model = build_model()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    data = batches()
    cached = [next(data) for _ in range(STEPS)]

    def run(steps: int) -> None:
        for i in range(steps):
            x, y = cached[i % len(cached)]
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

    return run, list(model.named_parameters())


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def bench_capture(repeats: int = 7) -> dict[str, float]:
    """Median seconds (wall and CPU) of STEPS training steps without and with capture (default
    policy), interleaved; on a shared machine the CPU ratio is the steadier figure."""
    run, params = mlp_loop()
    run(20)  # warm up
    times: dict[str, list[float]] = {"plain": [], "plain_cpu": [], "cap": [], "cap_cpu": []}
    for _ in range(repeats):
        _, wall, cpu = _timed(lambda: run(STEPS))
        times["plain"].append(wall)
        times["plain_cpu"].append(cpu)
        with tpx_inspect.capture(params=params):
            _, wall, cpu = _timed(lambda: run(STEPS))
        times["cap"].append(wall)
        times["cap_cpu"].append(cpu)
    m = {k: statistics.median(v) for k, v in times.items()}
    return {
        "plain_s": m["plain"], "captured_s": m["cap"], "ratio": m["cap"] / m["plain"],
        "plain_cpu_s": m["plain_cpu"], "captured_cpu_s": m["cap_cpu"],
        "ratio_cpu": m["cap_cpu"] / m["plain_cpu"],
    }  # fmt: skip


def chain(n: int) -> tpx_inspect.Trace:
    """A trace of one n-op chain."""
    with tpx_inspect.capture("all", values="none") as cap:
        x = tp.ones(4, requires_grad=True)
        y = x
        for _ in range(n):
            y = y * 1.0
        y.sum().backward()
    return cap.trace


def bench_save_load(n: int = 100_000) -> dict[str, float]:
    """Seconds (wall, and CPU of this process) to capture, save, load and export DOT of an
    n-node chain (the machine may be shared: CPU time is the steadier figure)."""
    out: dict[str, float] = {}
    trace, out["capture_s"], out["capture_cpu_s"] = _timed(lambda: chain(n - 2))
    out["nodes"] = float(len(trace.graphs[0].nodes))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "chain.json")
        _, out["save_s"], out["save_cpu_s"] = _timed(lambda: tpx_inspect.save(trace, path))
        out["json_mb"] = os.path.getsize(path) / 1e6
        out["npz_mb"] = os.path.getsize(path[:-5] + ".npz") / 1e6
        loaded, out["load_s"], out["load_cpu_s"] = _timed(lambda: tpx_inspect.load(path))
    _, out["dot_s"], out["dot_cpu_s"] = _timed(lambda: to_dot(loaded.graphs[0]))
    return out


def main() -> dict[str, Any]:
    """Run both benchmarks and print the figures."""
    cap = bench_capture()
    print(
        f"capture overhead (MLP, {STEPS} steps, default policy): wall {cap['plain_s']:.3f} -> "
        f"{cap['captured_s']:.3f} s ({cap['ratio']:.2f}x), CPU {cap['plain_cpu_s']:.3f} -> "
        f"{cap['captured_cpu_s']:.3f} s ({cap['ratio_cpu']:.2f}x) (target <= 1.3x)"
    )
    sl = bench_save_load()
    print(
        f"100k-node chain (wall / CPU): capture {sl['capture_s']:.2f} / "
        f"{sl['capture_cpu_s']:.2f} s,"
        f" save {sl['save_s']:.2f} / {sl['save_cpu_s']:.2f} s ({sl['json_mb']:.1f} MB JSON + "
        f"{sl['npz_mb']:.1f} MB npz), load {sl['load_s']:.2f} / {sl['load_cpu_s']:.2f} s "
        f"(target <= 2 s each), DOT {sl['dot_s']:.2f} / {sl['dot_cpu_s']:.2f} s"
    )
    return {"capture": cap, "save_load": sl}


if __name__ == "__main__":
    main()
