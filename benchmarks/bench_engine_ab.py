"""The engine before and after a change, in one run: ``benchmarks/run.py tpx``'s TPX rows timed
with OLD (TPX and P10 of a git revision, by default e93dec6, the main branch before issue 12
merged the backward loops and recording paths) and with NEW (this checkout).

Each round runs, case by case, one subprocess per version, alternating which goes first, so
both see the same machine load. Each row gives the best time of each version over the rounds,
their ratio, and the median and range of the rounds' own NEW / OLD ratios (on a loaded machine
the median is the steadier figure). A ratio above 1.05 means the change made that row more than
5% slower (issue 12's limit).

    python benchmarks/bench_engine_ab.py [--rounds N] [--rev REV] [--quick] [CASE ...]
"""

from __future__ import annotations

import argparse
import json
import os
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
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.quick, args.cases)))
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
