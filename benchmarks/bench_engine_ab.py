"""The engine before and after a change, in one run: ``benchmarks/run.py tpx``'s TPX rows timed
with OLD (TPX and P10 of a git revision, by default e93dec6, the main branch before issue 12
merged the backward loops and recording paths) and with NEW (this checkout).

Each round runs, case by case, one subprocess per version, alternating which goes first, so
both see the same machine load. Each row gives the best time of each version over the rounds,
their ratio, and the median and range of the rounds' own NEW / OLD ratios (on a loaded machine
the median is the steadier figure). A ratio above 1.05 means the change made that row more than
5% slower (issue 12's limit).

With ``--instructions`` it counts instead of timing: each version runs ``--steps`` calls of
each case under valgrind's callgrind (``--toggle-collect`` counts only the calls themselves,
not the start-up), which gives the CPU instructions per op. The counts do not move with the
machine's load, so they can show a difference of 1% where times cannot (they are a proxy:
cache misses and branch mispredictions are not in them).

    python benchmarks/bench_engine_ab.py [--rounds N] [--rev REV] [--quick] [CASE ...]
    python benchmarks/bench_engine_ab.py --instructions [--steps N] [--rev REV] [CASE ...]
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
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


def worker(quick: bool, only: list[str]) -> dict[str, float]:
    """Seconds per call of each TPX contender of bench_tpx, in this process's TPX."""
    from threadpoolctl import threadpool_limits

    sys.path.insert(0, str(HERE))
    sys.modules["torch"] = None  # type: ignore[assignment]  # NOTE: no peer column: a quicker start
    import bench_tpx

    times = {}
    with threadpool_limits(limits=1):
        for case in bench_tpx.cases(quick):
            if only and case.name not in only:
                continue
            call = case.contenders["tpx"]()
            call()  # warm up
            single = bench_tpx._time(call, 1)
            number = max(1, int(0.15 / max(single, 1e-9)))
            times[case.name] = min(bench_tpx._time(call, number) for _ in range(3)) / case.per
    return times


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
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    args = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    args += ["--collect-atstart=no", "--toggle-collect=functools_reduce"]
    args += [sys.executable, str(Path(__file__).resolve()), "--count-worker", name]
    args += ["--steps", str(steps)]
    err = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stderr
    collected = int(re.search(r"Collected : (\d+)", err).group(1))
    per = next(c.per for c in _bench_tpx().cases(True) if c.name == name)
    return collected / steps / per


def count_report(trees: dict[str, Path], names: list[str], steps: int, rev: str) -> str:
    """Rows: case, OLD and NEW instructions per op (per step for whole steps), NEW / OLD."""
    lines = [f"{'case':11} {'old instr':>12} {'new instr':>12}  new/old  (old = {rev})"]
    for name in names:
        old, new = (count_version(trees[v], name, steps) for v in ("old", "new"))
        mark = "ok" if new / old <= LIMIT else f"MORE than {LIMIT}"
        lines.append(f"{name:11} {old:12,.0f} {new:12,.0f}  {new / old:6.3f}  {mark}")
    return "\n".join(lines)


def _bench_tpx() -> Any:
    sys.path.insert(0, str(HERE))
    import bench_tpx

    return bench_tpx


def run_version(tree: Path, quick: bool, only: list[str]) -> dict[str, float]:
    """One worker subprocess importing P10 and TPX from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    args = [sys.executable, str(Path(__file__).resolve()), "--worker", *only]
    args += ["--quick"] * quick
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def report(times: dict[str, dict[str, list[float]]], rev: str) -> str:
    """Rows: case, OLD and NEW best microseconds per op (per step for whole steps), NEW / OLD of
    the bests, and the median and range of the per-round ratios (each round times OLD and NEW
    back to back, so a round's ratio sees one machine load)."""
    lines = [
        f"{'case':11} {'old us':>10} {'new us':>10}  new/old  {'median':>6} {'range':>13}"
        f"  (old = {rev}, best of each; median of the rounds' ratios)"
    ]
    for name, old in times["old"].items():
        new = times["new"][name]
        ratio = min(new) / min(old)
        rounds = sorted(n / o for n, o in zip(new, old))
        median = statistics.median(rounds)
        mark = "ok" if ratio <= LIMIT else f"SLOWER than {LIMIT}"
        lines.append(
            f"{name:11} {min(old) * 1e6:10.3f} {min(new) * 1e6:10.3f}  {ratio:6.3f}  "
            f"{median:6.3f} {rounds[0]:6.3f}-{rounds[-1]:6.3f}  {mark}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the OLD / NEW table; returns 0 (the limit is reported, not enforced)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--rev", default="e93dec6", help="the OLD git revision")
    parser.add_argument("--quick", action="store_true", help="a shorter deep chain")
    parser.add_argument("cases", nargs="*", help="only these rows (default: all)")
    parser.add_argument("--instructions", action="store_true", help="count (callgrind)")
    parser.add_argument("--steps", type=int, default=4, help="calls counted per case")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--count-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.quick, args.cases)))
        return 0
    if args.count_worker:
        count_worker(args.count_worker, args.steps)
        return 0
    if args.instructions:
        with tempfile.TemporaryDirectory(prefix="tpx-engine-ab-") as tmp:
            trees = {"old": export(args.rev, Path(tmp) / "old"), "new": snapshot(Path(tmp) / "new")}
            names = args.cases or ["chain", "fan-in", "mlp-sgd", "fwd-nograd"]
            print(count_report(trees, names, args.steps, args.rev))
        return 0
    times: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tpx-engine-ab-") as tmp:
        trees = {"old": export(args.rev, Path(tmp) / "old"), "new": snapshot(Path(tmp) / "new")}
        names = args.cases or [c.name for c in _bench_tpx().cases(args.quick)]
        for r in range(args.rounds):
            for name in names:  # one case per worker: OLD and NEW alternate case by case
                for version in ("old", "new") if r % 2 == 0 else ("new", "old"):
                    seconds = run_version(trees[version], args.quick, [name])[name]
                    times[version].setdefault(name, []).append(seconds)
    print(f"{args.rounds} alternating rounds in {time.perf_counter() - start:.0f} s")
    print(report(times, args.rev))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
