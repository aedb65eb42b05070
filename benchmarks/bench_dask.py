"""TPX training steps on a real Dask cluster (2 worker processes on 127.0.0.1), from one run.

(a) One step of an MLP (512 -> 64 -> 1, MSE, SGD with momentum) at 4k, 16k and 64k rows in
    chunks of 512 rows: tasks run per step (counted by a scheduler plugin), graphs sent per
    step, the most runs of one task (1: nothing recomputed) and wall seconds per step, against
    the same step on NumPy in this process. The data is made on the workers and kept there.
(b) ``examples/train_on_dask.py``: full-batch steps over a dataset made on the workers; the
    peak memory of the client process (which also hosts the scheduler) and of each worker.

    python benchmarks/run.py dask
    BENCH_DASK_DATA_GB=4 BENCH_DASK_WORKER_MEMORY=512MB python benchmarks/run.py dask  # full size

Sizes: ``BENCH_DASK_ROWS`` (comma list, default ``4096,16384,65536``), ``BENCH_DASK_DATA_GB``
(default 0.5: a few minutes on a shared 2-core machine; the example's full size is 4, 4x the
2 x 512 MB of worker memory), ``BENCH_DASK_WORKER_MEMORY`` (default 512MB),
``BENCH_DASK_STEPS`` (default 2).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info

import p10
import tpx as tp
import tpx.nn as nn
import tpx.optim as optim

FEATURES, HIDDEN, CHUNK = 512, 64, 512
ROOT = Path(__file__).resolve().parent.parent


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _model() -> nn.Module:
    tp.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))


def _steps(x: Any, y: Any, steps: int, after_step: Any) -> list[float]:
    """Wall seconds of each step after one warm-up step; ``after_step()`` ends each step."""
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    tp.materialize(model)
    times = []
    for i in range(steps + 1):
        start = time.perf_counter()
        opt.zero_grad()
        loss = (model(x) - y).square().mean()
        loss.backward()
        opt.step()
        tp.materialize(loss, model, opt)
        loss.item()
        after_step(model, opt, loss)
        if i:
            times.append(time.perf_counter() - start)
    return times


def bench_steps(client: Any, rows: int, steps: int) -> dict[str, Any]:
    """(a) at ``rows`` rows: Dask per-step tasks and seconds, and NumPy's seconds."""
    import dask.array as da
    from distributed import futures_of, wait

    from p10.backends import dask_extras
    from p10.backends.dask_diagnostics import count_tasks

    rng = da.random.default_rng(rows)
    xd = rng.standard_normal((rows, FEATURES), chunks=(CHUNK, FEATURES), dtype=np.float32)
    yd = rng.standard_normal((rows, 1), chunks=(CHUNK, 1), dtype=np.float32)
    x, y = (tp.asarray(dask_extras.from_dask(a)) for a in (xd, yd))
    tp.materialize(x, y)  # the data stays on the workers; not part of a step
    counter = count_tasks(client)
    counts: list[tuple[int, int, int]] = []

    def settle(model: Any, opt: Any, loss: Any) -> None:
        held = [loss, *model.parameters()]
        held += [v for s in opt.state.values() for v in s.values() if isinstance(v, tp.Tensor)]
        wait([f for t in held for f in futures_of(t.p10._data)])
        counts.append((counter.executed, len(counter.graphs), counter.most_runs))
        counter.reset()

    with p10.use_backend("dask"):
        dask_times = _steps(x, y, steps, settle)
    xs, ys = p10.fetch(x.p10, y.p10)
    with p10.use_backend("numpy"):
        numpy_times = _steps(tp.asarray(xs), tp.asarray(ys), max(steps, 3), lambda *a: None)
    client.cluster.scheduler.remove_plugin(name=counter.name)
    last = counts[-1]
    return {
        "rows": rows, "chunks": -(-rows // CHUNK), "tasks": last[0], "graphs": last[1],
        "most_runs": max(c[2] for c in counts[1:]), "dask_s": statistics.median(dask_times),
        "numpy_s": min(numpy_times),
    }  # fmt: skip


def bench_out_of_core() -> dict[str, Any]:
    """(b) the example at the configured size, in a process of its own: its peak memory is
    then the example's alone."""
    out = Path(tempfile.mkdtemp()) / "train_on_dask.json"
    argv = [
        sys.executable, str(ROOT / "examples" / "train_on_dask.py"), "--json", str(out),
        "--data-gb", _env("BENCH_DASK_DATA_GB", "0.5"),
        "--worker-memory", _env("BENCH_DASK_WORKER_MEMORY", "512MB"),
        "--steps", _env("BENCH_DASK_STEPS", "2"),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(argv, check=True, env=env, stderr=subprocess.DEVNULL)
    return json.loads(out.read_text())


def dask_extras_limit_gb(limit: str) -> float:
    """The two workers' memory limit in GB (``"512MB"`` -> 1.024)."""
    from dask.utils import parse_bytes

    return 2 * parse_bytes(limit) / 1e9


def _blas() -> str:
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    return "; ".join(
        f"{p['internal_api']} {p['version']} ({p['num_threads']} thread)" for p in pools
    )


def main() -> dict[str, Any]:
    try:
        from p10.backends import dask_extras
    except ImportError as e:  # pragma: no cover - dask missing
        print(f"dask benchmark skipped: {e}")
        return {}
    print(f"BLAS: {_blas()}")
    rows_list = [int(r) for r in _env("BENCH_DASK_ROWS", "4096,16384,65536").split(",")]
    steps = int(_env("BENCH_DASK_STEPS", "2"))
    client = dask_extras.connect(n_workers=2, threads_per_worker=1, memory_limit="1GB")
    results = []
    try:
        print(f"(a) MLP {FEATURES} -> {HIDDEN} -> 1 step, chunks of {CHUNK} rows, 2 workers")
        print(f"{'rows':>7}{'chunks':>8}{'tasks':>8}{'graphs':>8}{'max runs':>10}"
              f"{'Dask s':>9}{'NumPy s':>9}{'ratio':>8}")  # fmt: skip
        for rows in rows_list:
            r = bench_steps(client, rows, steps)
            results.append(r)
            print(
                f"{r['rows']:>7}{r['chunks']:>8}{r['tasks']:>8}{r['graphs']:>8}"
                f"{r['most_runs']:>10}{r['dask_s']:>9.2f}{r['numpy_s']:>9.3f}"
                f"{r['dask_s'] / r['numpy_s']:>8.1f}"
            )
    finally:
        dask_extras.close(client)
    print("(b) examples/train_on_dask.py", flush=True)
    ooc = bench_out_of_core()
    limit = dask_extras_limit_gb(ooc["worker_memory"])
    print(
        f"data {ooc['data_gb']:.3g} GB = {ooc['data_gb'] / limit:.2f}x the workers' 2 x "
        f"{ooc['worker_memory']}; client peak {ooc['client_peak_mb']:.0f} MB "
        f"(before training {ooc['client_before_mb']:.0f} MB); workers' peaks "
        f"{', '.join(f'{m:.0f}' for m in ooc['worker_peaks_mb'])} MB"
    )
    return {"steps": results, "out_of_core": ooc}


if __name__ == "__main__":
    main()
