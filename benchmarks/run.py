"""Run the benchmarks: every ``benchmarks/bench_*.py`` module's ``main()``, or the named ones.

    python benchmarks/run.py            # all of them
    python benchmarks/run.py p10        # only bench_p10.py (``bench_p10`` works too)

BLAS is pinned to one thread for the whole run: on shared 2-core machines OpenBLAS with two
threads was measured 10-100x slower under contention.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent


def discover() -> dict[str, Path]:
    """Benchmark modules by short name (``p10`` for ``bench_p10.py``), sorted."""
    return {p.stem.removeprefix("bench_"): p for p in sorted(HERE.glob("bench_*.py"))}


def load(path: Path) -> ModuleType:
    """Import a benchmark module by its name: run as a script, run.py has benchmarks/ as
    ``sys.path[0]``, so a module run here and the same module imported by another benchmark
    (``import bench_tpx``) are one module, executed once."""
    return importlib.import_module(path.stem)


def select(names: list[str], found: dict[str, Path]) -> list[Path]:
    """The paths of the named benchmarks (all when none is named); unknown names raise."""
    if not names:
        return list(found.values())
    short = [n.removesuffix(".py").removeprefix("bench_") for n in names]
    unknown = [n for n, s in zip(names, short) if s not in found]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}; available: {', '.join(found)}")
    return [found[s] for s in short]


def run_one(path: Path) -> int:
    """Call the module's ``main()`` as if it ran alone; its exit status (0 unless an int)."""
    module = load(path)
    saved = sys.argv
    sys.argv = [str(path)]  # a main() that parses sys.argv sees no options
    # NOTE: pinned after the import: threadpoolctl only limits libraries already loaded
    try:
        with threadpool_limits(limits=1):
            result = module.main()
    finally:
        sys.argv = saved
    return result if isinstance(result, int) else 0


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks in order; the exit status is the worst one returned."""
    names = sys.argv[1:] if argv is None else argv
    status = 0
    for path in select(names, discover()):
        print(f"== {path.name} ==", flush=True)
        status = max(status, run_one(path))
    return status


if __name__ == "__main__":
    # benchmarks import the project's packages; make them importable from a plain checkout
    sys.path.insert(0, str(HERE.parent))
    raise SystemExit(main())
