"""One MLP training step (forward, backward, SGD update) with TPX on every installed P10 backend.

The same TPX code runs on each backend; only ``backend=`` changes. PyTorch's own autograd on
the same step is the reference. Dask persists the parameters after each step (see
``p10.backends.dask_extras.persist``) so the graph does not grow with the step count.

    python benchmarks/bench_backends.py                 # every installed backend
    python benchmarks/bench_backends.py --batch 256 --steps 30 --backends numpy torch
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import p10
import tpx as tp

CANDIDATES = ["numpy", "array_api_strict", "torch", "torch:cuda", "dask"]


def _data(batch: int, sizes: tuple[int, ...]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params += [rng.standard_normal((n_in, n_out)) / np.sqrt(n_in), np.zeros(n_out)]
    x = rng.standard_normal((batch, sizes[0]))
    y = rng.integers(0, sizes[-1], batch)
    return [p.astype(np.float32) for p in params], x.astype(np.float32), y


def tpx_step(backend: str, batch: int, sizes: tuple[int, ...]) -> Callable[[], float]:
    """A closure running one SGD step of the MLP with TPX on ``backend``; returns the loss."""
    arrays, xs, ys = _data(batch, sizes)
    params = [tp.asarray(a, backend=backend, requires_grad=True) for a in arrays]
    x = tp.asarray(xs, backend=backend)
    rows, labels = p10.arange(batch, backend=backend), p10.asarray(ys, backend=backend)
    persist = _persister(backend)

    def step() -> float:
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = h.relu()
        loss = -tp.log_softmax(h, axis=1)[rows, labels].mean()
        loss.backward()
        with tp.no_grad():
            for p in params:
                p -= 0.1 * p.grad
                p.grad = None
        persist(params)
        return loss.item()

    return step


def _persister(backend: str) -> Callable[[list[Any]], None]:
    if not backend.startswith("dask"):
        return lambda params: None
    from p10.backends import dask_extras

    return lambda params: dask_extras.persist(*params)


def torch_step(batch: int, sizes: tuple[int, ...]) -> Callable[[], float]:
    """The same step with PyTorch's own autograd (the reference)."""
    import torch

    arrays, xs, ys = _data(batch, sizes)
    params = [torch.tensor(a, requires_grad=True) for a in arrays]
    x, y = torch.tensor(xs), torch.tensor(ys)

    def step() -> float:
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = h.relu()
        loss = torch.nn.functional.cross_entropy(h, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.1 * p.grad
                p.grad = None
        return loss.item()

    return step


def measure(step: Callable[[], float], steps: int) -> tuple[float, float]:
    """Median seconds per step after two warm-up steps, and the last loss."""
    loss = step()
    loss = step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - start)
    return statistics.median(times), loss


def installed(name: str) -> bool:
    """Whether ``name`` can be made here (its library installed, its device present)."""
    try:
        p10.get_backend(name)
    except p10.BackendError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 256, 10])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=CANDIDATES)
    args = parser.parse_args(argv)
    sizes = tuple(args.sizes)
    print(f"MLP {' -> '.join(map(str, sizes))}, batch {args.batch}, float32, SGD step")
    print(f"{'backend':<28}{'ms/step':>10}{'last loss':>12}")
    rows: list[tuple[str, Callable[[], float]]] = []
    for name in args.backends:
        if installed(name):
            rows.append((f"tpx on {name}", tpx_step(name, args.batch, sizes)))
        else:
            print(f"{'tpx on ' + name:<28}{'not installed':>10}")
    if installed("torch"):
        rows.append(("torch autograd (reference)", torch_step(args.batch, sizes)))
    for label, step in rows:
        seconds, loss = measure(step, args.steps)
        print(f"{label:<28}{seconds * 1e3:>10.2f}{loss:>12.5f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
