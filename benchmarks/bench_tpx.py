"""TPX's autograd overhead against NumPy with a hand-written backward, P10 and PyTorch eager.

Every ratio is measured in one run: the contenders of a case are timed in alternation, with
BLAS pinned to one thread, and each keeps its best round. Times are the process's CPU time
(``time.process_time``), so that other processes on a shared machine, which take the CPU away
from both contenders at random moments, distort the ratios less than wall-clock time would.
PyTorch is an optional column (``pip install torch==2.13.0``); without it its ratios read "-".

Cases and goals (from the TPX issue):

- (a) ``chain``: 1000 elementwise ops (``*w``, ``+b``, ``tanh``) on a (4, 4) float32 tensor,
  forward and backward, per op: at most 0.8x PyTorch and 3.5x NumPy with a hand-written backward;
- (b) ``deep``: the same ops 20,000 deep, forward and backward: at most 0.5x PyTorch;
- (c) ``fan-in``: one (4, 4) tensor used by 1000 consumers, backward only: at most 0.5x PyTorch;
- (d) ``mlp-sgd``: one SGD step of an MLP 784-256-128-10, batch 64: at most 1.3x NumPy;
- (e) ``fwd-nograd``: the chain of (a) and the MLP forward with ``requires_grad=False``: at most
  1.2x the same ops in P10.

    python benchmarks/bench_tpx.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import p10
import tpx as tp

try:  # an optional peer, never a requirement
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

Timed = Callable[[], Callable[[], object]]  # setup -> the call to time


@dataclass(frozen=True)
class Case:
    """One benchmark: contenders (name -> setup returning the timed call) and goals."""

    name: str
    what: str
    per: int  # report the time per this many units (ops), 1 for a whole step
    contenders: dict[str, Timed]
    goals: dict[str, float]  # peer name -> maximal ratio tpx / peer


@dataclass(frozen=True)
class Row:
    """A measured case: best seconds per contender."""

    case: Case
    best: dict[str, float]

    def ratio(self, peer: str) -> float | None:
        if peer not in self.best:
            return None
        return self.best["tpx"] / self.best[peer]


def blas_description() -> str:
    """Which BLAS NumPy uses and how many threads it runs, from threadpoolctl."""
    parts = [
        f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} thread(s))"
        for p in threadpool_info()
        if p.get("user_api") == "blas"
    ]
    return "; ".join(parts) or "no BLAS found by threadpoolctl"


# -- (a), (b), (e): a chain of elementwise ops -----------------------------------------------
def _chain_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    w = (1 + 0.01 * rng.standard_normal((4, 4))).astype(np.float32)
    b = (0.01 * rng.standard_normal((4, 4))).astype(np.float32)
    return x, w, b


def _forward_chain(y, w, b, n: int, tanh: Callable):
    for i in range(n):
        k = i % 3
        y = y * w if k == 0 else (y + b if k == 1 else tanh(y))
    return y


def tpx_chain(n: int, grad: bool = True) -> Timed:
    def setup():
        xa, wa, ba = _chain_arrays()
        x = tp.asarray(xa, requires_grad=grad)
        w, b = tp.asarray(wa), tp.asarray(ba)
        if not grad:
            return lambda: _forward_chain(x, w, b, n, tp.Tensor.tanh)

        def step():
            x.grad = None
            _forward_chain(x, w, b, n, tp.Tensor.tanh).sum().backward()

        return step

    return setup


def p10_chain(n: int) -> Timed:
    def setup():
        xa, wa, ba = _chain_arrays()
        x, w, b = p10.asarray(xa), p10.asarray(wa), p10.asarray(ba)
        return lambda: _forward_chain(x, w, b, n, p10.Tensor.tanh)

    return setup


def numpy_chain(n: int) -> Timed:
    """NumPy forward keeping what the backward needs, and the hand-written backward."""

    def setup():
        x, w, b = _chain_arrays()

        def step():
            saved = []
            y = x
            for i in range(n):
                k = i % 3
                if k == 0:
                    y = y * w
                elif k == 1:
                    y = y + b
                else:
                    y = np.tanh(y)
                    saved.append(y)
            g = np.ones_like(y)
            for i in reversed(range(n)):
                k = i % 3
                if k == 0:
                    g = g * w
                elif k == 2:
                    t = saved.pop()
                    g = g * (1 - t * t)
            return g

        return step

    return setup


def torch_chain(n: int) -> Timed:
    def setup():
        xa, wa, ba = _chain_arrays()
        x = torch.tensor(xa, requires_grad=True)
        w, b = torch.tensor(wa), torch.tensor(ba)

        def step():
            x.grad = None
            _forward_chain(x, w, b, n, torch.tanh).sum().backward()

        return step

    return setup


# -- (c): one tensor, a thousand consumers; backward only ---------------------------------------
def _fan_in(lib, n: int, stack: Callable) -> Timed:
    def setup():
        rng = np.random.default_rng(1)
        xa = rng.standard_normal((4, 4)).astype(np.float32)
        ws = [lib.tensor(rng.standard_normal((4, 4)).astype(np.float32)) for _ in range(n)]
        x = lib.tensor(xa, requires_grad=True)
        loss = stack([(x * w).sum() for w in ws]).sum()

        def step():
            x.grad = None
            loss.backward(retain_graph=True)  # the same graph each round, in both libraries

        return step

    return setup


# -- (d), (e): an MLP 784-256-128-10, batch 64 -----------------------------------------------
SIZES = (784, 256, 128, 10)
BATCH = 64
LR = 0.01


def _mlp_arrays() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    params = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    onehot = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return params, x, onehot


def _mlp_logits(params, x, relu: Callable):
    w1, b1, w2, b2, w3, b3 = params
    h1 = relu(x @ w1 + b1)
    h2 = relu(h1 @ w2 + b2)
    return h2 @ w3 + b3


def tpx_mlp(grad: bool = True) -> Timed:
    def setup():
        arrays, xa, ya = _mlp_arrays()
        params = [tp.asarray(a, requires_grad=grad) for a in arrays]
        x, onehot = tp.asarray(xa), tp.asarray(ya)
        if not grad:
            return lambda: _mlp_logits(params, x, tp.Tensor.relu)

        def step():
            logp = tp.log_softmax(_mlp_logits(params, x, tp.Tensor.relu), axis=-1)
            loss = -(logp * onehot).sum() / BATCH
            loss.backward()
            with tp.no_grad():
                for p in params:
                    p -= LR * p.grad
                    p.grad = None

        return step

    return setup


def p10_mlp() -> Timed:
    def setup():
        arrays, xa, _ = _mlp_arrays()
        params = [p10.asarray(a) for a in arrays]
        x = p10.asarray(xa)
        return lambda: _mlp_logits(params, x, p10.Tensor.relu)

    return setup


def numpy_mlp() -> Timed:
    """The same SGD step with NumPy and a hand-written backward."""

    def setup():
        params, x, onehot = _mlp_arrays()

        def step():
            w1, b1, w2, b2, w3, b3 = params
            z1 = x @ w1 + b1
            h1 = np.maximum(z1, 0)
            z2 = h1 @ w2 + b2
            h2 = np.maximum(z2, 0)
            z3 = h2 @ w3 + b3
            shifted = z3 - z3.max(axis=-1, keepdims=True)
            logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
            _loss = -(logp * onehot).sum() / BATCH
            g3 = (np.exp(logp) - onehot) / BATCH
            g2 = (g3 @ w3.T) * (z2 > 0)
            g1 = (g2 @ w2.T) * (z1 > 0)
            grads = (x.T @ g1, g1.sum(0), h1.T @ g2, g2.sum(0), h2.T @ g3, g3.sum(0))
            for p, g in zip(params, grads):
                p -= LR * g

        return step

    return setup


def torch_mlp() -> Timed:
    def setup():
        arrays, xa, ya = _mlp_arrays()
        params = [torch.tensor(a, requires_grad=True) for a in arrays]
        x, onehot = torch.tensor(xa), torch.tensor(ya)

        def step():
            logp = torch.log_softmax(_mlp_logits(params, x, torch.relu), dim=-1)
            loss = -(logp * onehot).sum() / BATCH
            loss.backward()
            with torch.no_grad():
                for p in params:
                    p -= LR * p.grad
                    p.grad = None

        return step

    return setup


# -- the run -----------------------------------------------------------------------------------
def cases(quick: bool = False) -> list[Case]:
    """Every case; ``torch`` contenders only when PyTorch is importable."""
    deep = 2000 if quick else 20_000
    out = [
        Case(
            "chain",
            "1000 (4,4) f32 ops, fwd+bwd, per op",
            1000,
            {"tpx": tpx_chain(1000), "numpy": numpy_chain(1000), "torch": torch_chain(1000)},
            {"torch": 0.8, "numpy": 3.5},
        ),
        Case(
            "deep",
            f"{deep}-deep chain, fwd+bwd, per op",
            deep,
            {"tpx": tpx_chain(deep), "torch": torch_chain(deep)},
            {"torch": 0.5},
        ),
        Case(
            "fan-in",
            "(4,4) used by 1000 consumers, bwd",
            1,
            {"tpx": _fan_in(tp, 1000, tp.stack), "torch": _fan_in(torch, 1000, _torch_stack)},
            {"torch": 0.5},
        ),
        Case(
            "mlp-sgd",
            "MLP 784-256-128-10 b64, SGD step",
            1,
            {"tpx": tpx_mlp(), "numpy": numpy_mlp(), "torch": torch_mlp()},
            {"numpy": 1.3},
        ),
        Case(
            "fwd-nograd",
            "chain fwd, requires_grad=False, /op",
            1000,
            {"tpx": tpx_chain(1000, grad=False), "p10": p10_chain(1000)},
            {"p10": 1.2},
        ),
        Case(
            "mlp-nograd",
            "MLP fwd, requires_grad=False",
            1,
            {"tpx": tpx_mlp(grad=False), "p10": p10_mlp()},
            {"p10": 1.2},
        ),
    ]
    if torch is None:
        for case in out:
            case.contenders.pop("torch", None)
    return out


def _torch_stack(xs: list) -> object:
    return torch.stack(xs)


def measure(case: Case, rounds: int, target_s: float) -> Row:
    """Time the contenders of ``case`` in alternation; keep each one's best round."""
    calls = {name: setup() for name, setup in case.contenders.items()}
    for call in calls.values():  # warm up, and size the rounds on the slowest
        call()
    slowest = max(_time(call, 1) for call in calls.values())
    number = max(1, int(target_s / max(slowest, 1e-9)))
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            best[name] = min(best[name], _time(call, number))
    return Row(case, best)


def _time(call: Callable[[], object], number: int) -> float:
    start = time.process_time()
    for _ in range(number):
        call()
    return (time.process_time() - start) / number


PEERS = ("torch", "numpy", "p10")


def report(rows: list[Row]) -> str:
    """The table that ``main`` prints: times in microseconds, ratios tpx / peer."""
    head = f"{'case':11} {'what':38} {'tpx us':>10} " + " ".join(f"{p + ' us':>10}" for p in PEERS)
    lines = [head + "  ratios (goal)"]
    for row in rows:
        per = row.case.per
        times = " ".join(
            f"{row.best[p] * 1e6 / per:10.3f}" if p in row.best else f"{'-':>10}" for p in PEERS
        )
        ratios = []
        for peer, goal in row.case.goals.items():
            r = row.ratio(peer)
            mark = "-" if r is None else f"{r:.2f}x ({'ok' if r <= goal else 'MISSES'} <= {goal})"
            ratios.append(f"vs {peer} {mark}")
        tpx_us = row.best["tpx"] * 1e6 / per
        lines.append(
            f"{row.case.name:11} {row.case.what:38} {tpx_us:10.3f} {times}  " + "; ".join(ratios)
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns 0 (goals are reported, not enforced)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds per case")
    parser.add_argument("--quick", action="store_true", help="a shorter deep chain")
    args = parser.parse_args(argv)
    print(f"numpy {np.__version__}, BLAS: {blas_description()}")
    print(f"torch {torch.__version__}" if torch is not None else "torch not installed: no column")
    with threadpool_limits(limits=1):
        print(f"pinned for the run: {blas_description()}")
        if torch is not None:
            torch.set_num_threads(1)
        rows = [measure(c, args.rounds, target_s=0.2) for c in cases(args.quick)]
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
