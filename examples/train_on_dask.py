"""Train an MLP on a dataset 4x larger than the memory of the Dask cluster it runs on.

    python examples/train_on_dask.py                  # 2 workers x 512 MB, a 4 GB dataset
    python examples/train_on_dask.py --quick          # 2 workers x 512 MB, 256 MB of data
    python examples/train_on_dask.py --data-gb 1 --worker-memory 128MB --steps 4

The dataset is a chunked ``dask.array`` whose chunks are made on the workers from a seed (a
stand-in for reading a chunked store such as Zarr): its graph holds seeds, never data, and
the client never holds a chunk. Every step is full-batch: the forward pass, the backward pass
and the optimizer update stream through all of the data, chunk by chunk, on the workers; only
the loss (one number) comes back. ``tp.materialize(loss, model, opt)`` computes each step in
one pass over its graph and keeps the new weights on the workers.

Why ``if __name__ == "__main__":``: the workers of a ``LocalCluster`` are new Python processes
that import this script as a module before they start. Code at the top level would run again
in each of them, start a cluster of its own, and the cluster's start fails ("Nanny failed to
start"); :func:`p10.backends.dask_extras.connect` says so when it is called from there.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

import p10
import tpx as tp
import tpx.nn as nn
import tpx.optim as optim
from p10.backends import dask_extras

FEATURES, HIDDEN = 256, 32


def dataset(rows: int, chunk_rows: int, seed: int = 0) -> tuple[tp.Tensor, tp.Tensor]:
    """Inputs ``x (rows, FEATURES)`` and targets ``y = tanh(x @ w) (rows, 1)``, float32,
    made chunk by chunk on the workers."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    x = rng.standard_normal((rows, FEATURES), chunks=(chunk_rows, FEATURES), dtype=np.float32)
    w = np.random.default_rng(seed + 1).standard_normal((FEATURES, 1)).astype(np.float32)
    y = da.tanh(x @ (w / np.sqrt(FEATURES)))
    return tp.asarray(dask_extras.from_dask(x)), tp.asarray(dask_extras.from_dask(y))


def build_model(seed: int = 0) -> nn.Module:
    """A FEATURES -> HIDDEN -> 1 ReLU MLP; its weights live on the cluster."""
    p10.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))


def rss_mb() -> float:
    """Resident memory of this process now, in MB."""
    import psutil

    return psutil.Process().memory_info().rss / 1e6


def peak_mb(monitor: Any, since: float) -> float:
    """Peak resident memory of a Dask server's process since ``since`` (a ``time.time()``), in
    MB, from the samples its system monitor takes twice a second."""
    q = monitor.quantities
    samples = [m for t, m in zip(q["time"], q["memory"]) if t >= since]
    return max(samples, default=0.0) / 1e6


def worker_peaks(client: Any, since: float) -> list[float]:
    """Peak resident memory of each worker process since ``since``, in MB."""
    return sorted(client.run(lambda dask_worker: peak_mb(dask_worker.monitor, since)).values())


def train(client: Any, rows: int, chunk_rows: int, steps: int, lr: float) -> dict[str, Any]:
    """Full-batch Adam steps; the losses, seconds per step and peak memories."""
    with p10.use_backend("dask"):
        x, y = dataset(rows, chunk_rows)
        model = build_model()
        opt = optim.Adam(model.parameters(), lr=lr)
        tp.materialize(model)
        client_before, began = rss_mb(), time.time()
        losses, seconds, client_now = [], [], []
        for step in range(steps):
            start = time.perf_counter()
            opt.zero_grad()
            loss = (model(x) - y).square().mean()
            loss.backward()
            opt.step()
            tp.materialize(loss, model, opt)  # one pass over the step's graph
            losses.append(loss.item())
            seconds.append(time.perf_counter() - start)
            client_now.append(rss_mb())
            print(
                f"step {step}: loss {losses[-1]:.5f}, {seconds[-1]:.1f} s, "
                f"client {client_now[-1]:.0f} MB"
            )
        # NOTE: the last update may still run on the workers; reading the weights waits for it
        weights = p10.fetch(*[p.p10 for p in model.parameters()])
    return {
        "losses": losses,
        "seconds": seconds,
        "client_before_mb": client_before,
        "client_after_step_mb": client_now,
        # NOTE: the client's process also runs the local cluster's scheduler
        "client_peak_mb": peak_mb(client.cluster.scheduler.monitor, began),
        "worker_peaks_mb": worker_peaks(client, began),
        "weights": weights,
    }


def rows_for(data_gb: float) -> int:
    """Rows of FEATURES float32 values that make ``data_gb`` GB."""
    return int(data_gb * 1e9 / (FEATURES * 4))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-gb", type=float, default=4.0, help="dataset size (default 4)")
    parser.add_argument("--worker-memory", default="512MB", help="limit per worker (2 workers)")
    parser.add_argument("--chunk-mb", type=float, default=16.0, help="size of one data chunk")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--quick", action="store_true", help="256 MB of data, 2 steps")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.quick:
        args.data_gb, args.steps = 0.256, 2
    rows = rows_for(args.data_gb)
    chunk_rows = max(1, int(args.chunk_mb * 1e6 / (FEATURES * 4)))
    client = dask_extras.connect(
        n_workers=2, threads_per_worker=1, memory_limit=args.worker_memory, host="127.0.0.1"
    )
    try:
        no_dashboard = "none (pip install bokeh==3.10.1 for one)"
        print(
            f"dashboard: {client.dashboard_link if dask_extras.has_dashboard() else no_dashboard}"
        )
        print(
            f"dataset: {rows} x {FEATURES} float32 = {args.data_gb:.3g} GB in "
            f"{-(-rows // chunk_rows)} chunks; 2 workers x {args.worker_memory}"
        )
        out = train(client, rows, chunk_rows, args.steps, args.lr)
    finally:
        dask_extras.close(client)
    print(
        f"peak memory: client {out['client_peak_mb']:.0f} MB "
        f"(before training {out['client_before_mb']:.0f} MB), "
        f"workers {', '.join(f'{m:.0f}' for m in out['worker_peaks_mb'])} MB"
    )
    out.pop("weights")
    out.update(rows=rows, data_gb=args.data_gb, worker_memory=args.worker_memory)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
