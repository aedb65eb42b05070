"""The engine before and after a change, in one run: ``benchmarks/run.py tpx``'s TPX rows timed
with OLD (TPX and P10 of a git revision, by default e93dec6, the main branch before issue 12
merged the backward loops and recording paths) and with NEW (this checkout).

Each round runs one subprocess per version, alternating which goes first, so both see the
same machine load; each keeps its best time per case over the rounds. A ratio NEW / OLD above
1.05 means the change made that row more than 5% slower (the limit issue 12 sets).

    python benchmarks/bench_engine_ab.py [--rounds N] [--rev REV] [--quick] [CASE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

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
    with tarfile.open(fileobj=BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    return into


def worker(quick: bool, only: list[str]) -> dict[str, float]:
    """Seconds per call of each TPX contender of bench_tpx, in this process's TPX."""
    from threadpoolctl import threadpool_limits

    sys.path.insert(0, str(HERE))
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


def run_version(tree: Path, quick: bool, only: list[str]) -> dict[str, float]:
    """One worker subprocess importing P10 and TPX from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    args = [sys.executable, str(Path(__file__).resolve()), "--worker", *only]
    args += ["--quick"] * quick
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def report(old: dict[str, float], new: dict[str, float], rev: str) -> str:
    """Rows: case, OLD and NEW microseconds per op (per step for whole steps), NEW / OLD."""
    lines = [f"{'case':11} {'old us':>10} {'new us':>10}  new/old  (old = {rev})"]
    for name in old:
        ratio = new[name] / old[name]
        mark = "ok" if ratio <= LIMIT else f"SLOWER than {LIMIT}"
        lines.append(
            f"{name:11} {old[name] * 1e6:10.3f} {new[name] * 1e6:10.3f}  {ratio:6.3f}  {mark}"
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
    best: dict[str, dict[str, float]] = {"old": {}, "new": {}}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tpx-engine-ab-") as tmp:
        trees = {"old": export(args.rev, Path(tmp)), "new": ROOT}
        for r in range(args.rounds):
            for version in ("old", "new") if r % 2 == 0 else ("new", "old"):
                for name, seconds in run_version(trees[version], args.quick, args.cases).items():
                    best[version][name] = min(best[version].get(name, seconds), seconds)
    print(f"{args.rounds} alternating rounds in {time.perf_counter() - start:.0f} s, best of each")
    print(report(best["old"], best["new"], args.rev))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
