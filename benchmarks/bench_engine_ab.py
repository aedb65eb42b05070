"""The engine before and after a change, in one run: ``benchmarks/run.py tpx``'s TPX rows timed
with OLD (TPX and P10 of a git revision, by default e93dec6, the main branch before issue 12
merged the backward loops and recording paths) and with NEW (this checkout).

One worker process per version, both pinned to the same CPU where the OS allows it, each with
every case set up once. A run is many short paired rounds: each round times OLD and NEW back to
back for ``--round-s`` CPU seconds each, in ABBA order (old-new, new-old, ...), and gives one
NEW / OLD ratio. Each row prints the median of its rounds' ratios with a bootstrap 90% interval
and a verdict against issue 12's limit (NEW at most 5% slower): ``ok`` when the whole interval
is within it, ``SLOWER`` when all of it is past it, ``unresolved`` when the run cannot tell.

With ``--instructions`` each version also runs ``--steps`` calls of each case under valgrind's
callgrind (``--toggle-collect`` counts only the calls themselves, not the start-up; the deep
chain at its quick depth, 2,000), printed beside the times: CPU instructions per op, which do
not move with the machine's load (a proxy: cache misses and branch mispredictions are not in
them). ``--rounds 0`` counts only.

    python benchmarks/bench_engine_ab.py [--rounds N] [--round-s S] [--rev REV] [--quick] [CASE ...]
    python benchmarks/bench_engine_ab.py --instructions [--steps N] [--rounds 0] [CASE ...]
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LIMIT = 1.05


def export(rev: str, into: Path) -> Path:
    """The ``p10`` and ``tpx`` packages of ``rev`` written under ``into`` (``git archive``)."""
    tar = subprocess.run(
        ["git", "archive", "--format=tar", rev, "p10", "tpx"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    return into


def snapshot(into: Path) -> Path:
    """A copy of this checkout's ``p10`` and ``tpx``: edits during the run change nothing."""
    for package in ("p10", "tpx"):
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / package, into / package, ignore=ignore)
    return into


def serve(quick: bool) -> None:
    """The timing worker: pinned to one CPU, it reads ``CASE NUMBER`` lines from stdin and
    answers each with the CPU seconds per op of ``NUMBER`` calls of the case (one JSON line).
    Each case is set up and warmed once, at its first line."""
    from threadpoolctl import threadpool_limits

    sys.path.insert(0, str(HERE))
    sys.modules["torch"] = None  # type: ignore[assignment]  # NOTE: no peer column: a quicker start
    import bench_tpx

    _pin()
    cases = {case.name: case for case in bench_tpx.cases(quick)}
    calls: dict[str, Any] = {}
    with threadpool_limits(limits=1):
        for line in sys.stdin:
            name, number = line.split()
            if name not in calls:
                calls[name] = cases[name].contenders["tpx"]()
                calls[name]()  # warm up
            seconds = bench_tpx._time(calls[name], int(number)) / cases[name].per
            print(json.dumps(seconds), flush=True)


def _pin() -> None:
    """Run on one CPU (the same for OLD and NEW: the last one this process may use), where the
    OS allows it: the two versions then share one core's caches and clock."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})


def count_worker(name: str, steps: int) -> None:
    """Run ``steps`` calls of case ``name`` inside ``functools.reduce``: the one C function
    that callgrind's ``--toggle-collect`` counts (nothing else here calls it)."""
    sys.path.insert(0, str(HERE))
    sys.modules["torch"] = None  # type: ignore[assignment]
    import bench_tpx

    case = next(c for c in bench_tpx.cases(True) if c.name == name)
    call = case.contenders["tpx"]()
    call()
    call()  # warm: caches filled, code specialized
    # NOTE: objects made so far leave the collector's view: a full collection during the
    # counted steps would otherwise add ~2% at random (when its threshold happens to fall)
    gc.collect()
    gc.freeze()
    functools.reduce(lambda _, __: call(), range(steps), None)


def count_version(tree: Path, name: str, steps: int) -> float:
    """Instructions per op (per step for whole steps) of case ``name`` in ``tree``'s TPX."""
    # NOTE: a fixed hash seed: string hashes, hence dict probing, are then the same every run
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    args = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    args += ["--collect-atstart=no", "--toggle-collect=functools_reduce"]
    args += [sys.executable, str(Path(__file__).resolve()), "--count-worker", name]
    args += ["--steps", str(steps)]
    err = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stderr
    collected = int(re.search(r"Collected : (\d+)", err).group(1))
    return collected / steps / _per(name, True)


def count(trees: dict[str, Path], names: list[str], steps: int) -> dict[str, tuple]:
    """Instructions per op (per step for whole steps) of OLD and NEW, case by case."""
    return {
        name: tuple(count_version(trees[v], name, steps) for v in ("old", "new")) for name in names
    }


def _bench_tpx() -> Any:
    sys.path.insert(0, str(HERE))
    import bench_tpx

    return bench_tpx


class Worker:
    """A timing worker subprocess (:func:`serve`) importing P10 and TPX from ``tree``."""

    def __init__(self, tree: Path, quick: bool) -> None:
        env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
        args = [sys.executable, str(Path(__file__).resolve()), "--worker", *["--quick"] * quick]
        self.process = subprocess.Popen(
            args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def time(self, name: str, number: int) -> float:
        """CPU seconds per op of ``number`` calls of case ``name``."""
        self.process.stdin.write(f"{name} {number}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def measure(
    workers: dict[str, Worker], names: list[str], rounds: int, round_s: float, quick: bool
) -> dict[str, list[float]]:
    """The rounds' NEW / OLD ratios of each case. A round times OLD and NEW back to back for
    about ``round_s`` each, in ABBA order over the rounds (old-new, new-old, ...), so a drift
    of the machine's load weighs on both versions alike."""
    numbers = {}
    for name in names:  # size a round on OLD's first (warm) call
        workers["new"].time(name, 1)  # warm NEW too
        single = workers["old"].time(name, 1) * _per(name, quick)
        numbers[name] = max(1, round(round_s / max(single, 1e-9)))
    ratios: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names:
            order = ("old", "new") if r % 2 == 0 else ("new", "old")
            seconds = {v: workers[v].time(name, numbers[name]) for v in order}
            ratios[name].append(seconds["new"] / seconds["old"])
    return ratios


def median_interval(ratios: list[float], level: float = 0.9, resamples: int = 2000) -> tuple:
    """The median of ``ratios`` and a bootstrap ``level`` interval of it (percentile method,
    a fixed seed: the same ratios give the same interval).

    >>> median_interval([1.0, 1.0, 1.0])
    (1.0, 1.0, 1.0)
    """
    rng = random.Random(0)
    n = len(ratios)
    medians = sorted(statistics.median(rng.choices(ratios, k=n)) for _ in range(resamples))
    tail = (1 - level) / 2
    low, high = medians[int(tail * resamples)], medians[int((1 - tail) * resamples) - 1]
    return statistics.median(ratios), low, high


def verdict(low: float, high: float) -> str:
    """``ok`` when the whole interval is within the limit, ``SLOWER`` when all of it is past
    it, else ``unresolved`` (the run cannot tell).

    >>> verdict(0.97, 1.02), verdict(1.06, 1.10), verdict(1.01, 1.07)
    ('ok', 'SLOWER than 1.05', 'unresolved')
    """
    if high <= LIMIT:
        return "ok"
    return f"SLOWER than {LIMIT}" if low > LIMIT else "unresolved"


def report(ratios: dict[str, list[float]], counts: dict[str, tuple] | None, rev: str) -> str:
    """Rows: case, the median of the rounds' NEW / OLD time ratios with its bootstrap 90%
    interval and verdict, and (with ``counts``) the instructions per op of OLD and NEW and
    their ratio."""
    head = f"{'case':11} {'time new/old':>12} {'90% interval':>15} {'verdict':18}"
    if counts:
        head += f" {'old instr':>12} {'new instr':>12} {'instr n/o':>9}"
    lines = [head + f"  (old = {rev}; median of paired rounds)"]
    for name in ratios or counts:
        line = f"{name:11}"
        if ratios:
            median, low, high = median_interval(ratios[name])
            line += f" {median:12.3f}   {low:6.3f}-{high:6.3f} {verdict(low, high):18}"
        else:
            line += f" {'-':>12} {'-':>15} {'-':18}"
        if counts:
            old, new = counts[name]
            line += f" {old:12,.0f} {new:12,.0f} {new / old:9.3f}"
        lines.append(line)
    return "\n".join(lines)


@functools.cache
def _per(name: str, quick: bool) -> int:
    """Ops per call of case ``name`` (a whole step counts as one)."""
    return next(c.per for c in _bench_tpx().cases(quick) if c.name == name)


def main(argv: list[str] | None = None) -> int:
    """Print the OLD / NEW table; returns 0 (the limit is reported, not enforced)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="paired rounds (0: count only)")
    parser.add_argument("--round-s", type=float, default=0.1, help="CPU seconds of one timing")
    parser.add_argument("--rev", default="e93dec6", help="the OLD git revision")
    parser.add_argument("--quick", action="store_true", help="a shorter deep chain")
    parser.add_argument("cases", nargs="*", help="only these rows (default: all)")
    parser.add_argument("--instructions", action="store_true", help="count too (callgrind)")
    parser.add_argument("--steps", type=int, default=2, help="calls counted per case")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--count-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        serve(args.quick)
        return 0
    if args.count_worker:
        count_worker(args.count_worker, args.steps)
        return 0
    start = time.perf_counter()
    names = args.cases or [c.name for c in _bench_tpx().cases(args.quick)]
    ratios: dict[str, list[float]] = {}
    counts = None
    with tempfile.TemporaryDirectory(prefix="tpx-engine-ab-") as tmp:
        trees = {"old": export(args.rev, Path(tmp) / "old"), "new": snapshot(Path(tmp) / "new")}
        if args.rounds:
            workers = {v: Worker(trees[v], args.quick) for v in ("old", "new")}
            try:
                ratios = measure(workers, names, args.rounds, args.round_s, args.quick)
            finally:
                for w in workers.values():
                    w.close()
        if args.instructions:  # NOTE: callgrind counts the quick cases (deep: 2,000)
            counts = count(trees, names, args.steps)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.rounds} paired rounds in {time.perf_counter() - start:.0f} s, load {load:.2f}")
    print(report(ratios, counts, args.rev))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
