"""``tpx.compile`` against eager TPX, PyTorch eager and NumPy with a hand-written backward.

The cases reuse ``bench_tpx.py``'s setups: the timed step of the ``compiled`` column is the
eager TPX step passed through ``tp.compile`` (recorded at the warm-up call, replayed after).
Every ratio is compiled / peer from one run, contenders timed in alternation, BLAS on one
thread, best round of each (process CPU time, as ``bench_tpx.py``); whole-step rows with a
goal also print the median over rounds of each round's own ratio (steadier under load).

Goals (issue 19): chain <= 0.25x PyTorch eager, deep <= 0.3x PyTorch, 1,000 consumers <= 0.5x
PyTorch, MLP SGD step <= 1.0x NumPy hand-written (the hand-written update, and ``mlp-optim``:
``tpx.optim.SGD``, lowered into the plan), tiny transformer step (AdamW, lowered) <= 0.8x TPX
eager; the plan's peak memory <= the eager call's peak (printed per case).

    python benchmarks/bench_compile.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import tpx as tp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_tpx as bt

PLANS: dict[str, tp.CompiledFunction] = {}
ROUNDS: dict[str, dict[str, list[float]]] = {}  # case -> contender -> seconds of each round


def compiled(name: str, setup: bt.Timed) -> bt.Timed:
    """``setup``'s step through ``tp.compile``; the compiled function is kept for its plan."""

    def make() -> Callable[[], object]:
        step = tp.compile(setup())
        PLANS[name] = step
        return step

    return make


def transformer(compile_step: bool) -> bt.Timed:
    """One training step of examples/tiny_transformer.py (AdamW, cosine schedule, clipping)."""

    def setup() -> Callable[[], object]:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
        import tiny_transformer as ex

        import tpx.nn.functional as F
        import tpx.optim as optim

        ids, vocab = ex.load_text()
        model = ex.build_model(len(vocab), 32)
        opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        sched = optim.CosineAnnealingLR(opt, T_max=10**9, eta_min=3e-4)
        x, y = ex.sample_batch(ids, 32, 32, np.random.default_rng(0))

        def step() -> object:
            opt.zero_grad()
            loss = F.cross_entropy(model(x).reshape(-1, len(vocab)), y.reshape(-1))
            loss.backward()
            optim.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            return loss

        if not compile_step:
            return step
        fn = tp.compile(step)
        PLANS["transformer"] = fn
        return fn

    return setup


def mlp_optim() -> bt.Timed:
    """The MLP step of ``bench_tpx.tpx_mlp`` with ``tpx.optim.SGD`` (``opt.step()``, then
    ``opt.zero_grad()``) instead of the hand-written update: under ``tp.compile`` the step is
    lowered into plan kernels."""

    def setup() -> Callable[[], object]:
        import tpx.optim as optim

        arrays, xa, ya = bt._mlp_arrays()
        params = [tp.asarray(a, requires_grad=True) for a in arrays]
        x, onehot = tp.asarray(xa), tp.asarray(ya)
        opt = optim.SGD(params, lr=bt.LR)

        def step() -> None:
            logp = tp.log_softmax(bt._mlp_logits(params, x, tp.Tensor.relu), axis=-1)
            loss = -(logp * onehot).sum() / bt.BATCH
            loss.backward()
            opt.step()
            opt.zero_grad()

        return step

    return setup


def cases(quick: bool = False) -> list[bt.Case]:
    """Each case: ``tpx`` is the compiled step (the numerator of every ratio)."""
    deep = 2000 if quick else 20_000
    torch = bt.torch is not None
    out = [
        bt.Case(
            "chain",
            "1000 (4,4) f32 ops, fwd+bwd, per op",
            1000,
            {
                "tpx": compiled("chain", bt.tpx_chain(1000)),
                "eager": bt.tpx_chain(1000),
                "numpy": bt.numpy_chain(1000),
                **({"torch": bt.torch_chain(1000)} if torch else {}),
            },
            {"torch": 0.25},
        ),
        bt.Case(
            "deep",
            f"{deep}-deep chain, fwd+bwd, per op",
            deep,
            {
                "tpx": compiled("deep", bt.tpx_chain(deep)),
                "eager": bt.tpx_chain(deep),
                **({"torch": bt.torch_chain(deep)} if torch else {}),
            },
            {"torch": 0.3},
        ),
        bt.Case(
            "fan-in",
            "(4,4) used by 1000 consumers, bwd",
            1,
            {
                "tpx": compiled("fan-in", bt._fan_in(tp, 1000, tp.stack)),
                "eager": bt._fan_in(tp, 1000, tp.stack),
                **({"torch": bt._fan_in(bt.torch, 1000, bt._torch_stack)} if torch else {}),
            },
            {"torch": 0.5},
        ),
        bt.Case(
            "mlp-sgd",
            "MLP 784-256-128-10 b64, SGD step",
            1,
            {
                "tpx": compiled("mlp-sgd", bt.tpx_mlp()),
                "eager": bt.tpx_mlp(),
                "numpy": bt.numpy_mlp(),
                **({"torch": bt.torch_mlp()} if torch else {}),
            },
            {"numpy": 1.0},
        ),
        bt.Case(
            "mlp-optim",
            "the same with tpx.optim.SGD (lowered)",
            1,
            {
                "tpx": compiled("mlp-optim", mlp_optim()),
                "eager": mlp_optim(),
                "numpy": bt.numpy_mlp(),
            },
            {"numpy": 1.0},
        ),
        bt.Case(
            "transformer",
            "tiny transformer train step (AdamW)",
            1,
            {"tpx": transformer(True), "eager": transformer(False)},
            {"eager": 0.8},
        ),
    ]
    return out


PEERS = ("eager", "torch", "numpy")


def measure(case: bt.Case, rounds: int, target_s: float) -> bt.Row:
    """``bench_tpx.measure`` (contenders in alternation, best round of each), keeping every
    round's time too: on a loaded machine the median of the rounds' own ratios is steadier
    than the ratio of the best rounds."""
    calls = {name: setup() for name, setup in case.contenders.items()}
    for call in calls.values():  # warm up, and size the rounds on the slowest
        call()
    number = max(1, int(target_s / max(max(bt._time(c, 1) for c in calls.values()), 1e-9)))
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            times[name].append(bt._time(call, number))
    ROUNDS[case.name] = times
    return bt.Row(case, {name: min(t) for name, t in times.items()})


def median_ratio(case: str, peer: str) -> float | None:
    """The median over rounds of compiled / ``peer`` within each round."""
    times = ROUNDS.get(case, {})
    if peer not in times:
        return None
    return statistics.median(a / b for a, b in zip(times["tpx"], times[peer]))


def report(rows: list[bt.Row]) -> str:
    """Times in microseconds (per op where the case says so), ratios compiled / peer."""
    head = f"{'case':12} {'what':38} {'compiled':>10} " + " ".join(f"{p:>10}" for p in PEERS)
    lines = [head + "  ratios compiled/peer (goal)   plan peak / eager peak"]
    for row in rows:
        per = row.case.per
        times = " ".join(
            f"{row.best[p] * 1e6 / per:10.3f}" if p in row.best else f"{'-':>10}" for p in PEERS
        )
        ratios = []
        for peer in PEERS:
            r = row.ratio(peer)
            if r is None:
                continue
            goal = row.case.goals.get(peer)
            mark = "" if goal is None else f" ({'ok' if r <= goal else 'MISSES'} <= {goal})"
            if goal is not None and row.case.per == 1:
                mark += f" [median of rounds {median_ratio(row.case.name, peer):.2f}x]"
            ratios.append(f"{peer} {r:.2f}x{mark}")
        lines.append(
            f"{row.case.name:12} {row.case.what:38} {row.best['tpx'] * 1e6 / per:10.3f} {times}  "
            + "; ".join(ratios)
            + "   "
            + _memory(row.case.name)
        )
    return "\n".join(lines)


def _memory(name: str) -> str:
    fn = PLANS.get(name)
    if fn is None or not fn.plans():
        return "no plan (ran eagerly)"
    d = fn.describe()[-1]
    eager = d["eager_peak_bytes"]
    verdict = "" if eager is None else (" ok" if d["peak_bytes"] <= eager else " MISSES")
    return f"{d['peak_bytes'] / 1e3:.1f} kB / {(eager or 0) / 1e3:.1f} kB{verdict}"


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns 0 (goals are reported, not enforced)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per case")
    parser.add_argument("--quick", action="store_true", help="a shorter deep chain")
    args = parser.parse_args(argv)
    print(f"numpy {np.__version__}, BLAS: {bt.blas_description()}")
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("error", tp.CompileWarning)  # a graph break would be no replay
        print(f"pinned for the run: {bt.blas_description()}")
        if bt.torch is not None:
            bt.torch.set_num_threads(1)
        # NOTE: a transformer step takes ~40 ms: longer rounds, so that a round is not
        # decided by one preemption on a shared machine
        rows = [
            measure(c, args.rounds, target_s=0.8 if c.name == "transformer" else 0.2)
            for c in cases(args.quick)
        ]
    print(report(rows))
    for name, fn in PLANS.items():
        s = fn.stats
        lowered = sum(d.get("optimizer_steps", 0) for d in fn.describe()[-1:])
        islands = sum(d.get("islands", 0) for d in fn.describe()[-1:])
        print(
            f"{name}: {s.records} record(s), {s.replays} replays, {s.eager_calls} eager calls, "
            f"{lowered} optimizer step(s) lowered into kernels, {islands} eager island(s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
