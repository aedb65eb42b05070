"""Export benchmark: ``tpx-inspect export --format svg`` of a 20,000-node transformer-like trace
(repeated scoped blocks) and of an unscoped 14,000-node scalar MLP (micrograd's moons MLP
written with TPX). Goal (issue 14): at most 5 s each, end to end (the CLI in a subprocess:
start, load, view model, DOT, Graphviz).

    python benchmarks/run.py export            # or: python benchmarks/bench_export.py [--quick]

Baseline, measured in the same run: the export before the view model (the graph folded by
scope depth with one "from" stub per long edge, ``to_dot(g, fold=True, stub=True)``, then
Graphviz), stopped at ``--baseline-timeout`` seconds (reported as "> N s").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from viewer_traces import scalar_mlp_trace, transformer_trace  # noqa: E402

GOAL_SECONDS = 5.0


def cli_export(run: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the child's user + system, Graphviz included) of
    ``tpx-inspect export --format svg`` in a fresh interpreter. On a shared machine the wall
    time includes waiting for a core; the CPU time does not."""
    cmd = [sys.executable, "-m", "tpx_inspect", "export", str(run), "--format", "svg", "-o",
           str(out)]  # fmt: skip
    before = _children_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False,
                          env=_env())  # fmt: skip
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"export failed: {done.stderr.strip()[-500:]}")
    return seconds, _children_cpu() - before


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def baseline_export(run: Path, timeout: float) -> str:
    """Seconds of the pre-view-model export, or ``> timeout`` when Graphviz did not finish."""
    import tpx_inspect
    from tpx_inspect.errors import ExportError
    from tpx_inspect.export.render import layout

    t0 = time.perf_counter()
    g = tpx_inspect.load(str(run / "trace.json")).graphs[0]
    try:
        layout(tpx_inspect.to_dot(g, fold=True, stub=True), "svg", timeout=timeout)
    except ExportError:
        return f"> {time.perf_counter() - t0:.0f} s"
    return f"{time.perf_counter() - t0:.1f} s"


def blas() -> str:
    """Which BLAS numpy uses (threadpoolctl)."""
    import numpy  # noqa: F401  (threadpoolctl sees only libraries already loaded)
    from threadpoolctl import threadpool_info

    libs = [f"{i.get('internal_api')} {i.get('version')}" for i in threadpool_info()
            if i.get("user_api") == "blas"]  # fmt: skip
    return ", ".join(libs) or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="traces a tenth of the size")
    parser.add_argument("--baseline-timeout", type=float, default=20.0)
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print(f"BLAS: {blas()}")
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = [
            ("transformer (scoped blocks)", transformer_trace(folder, 20_000 // scale)),
            ("scalar MLP (unscoped)", scalar_mlp_trace(folder, 14_000 // scale)),
        ]
        cli_export(cases[0][1][0], folder / "warm.svg")  # NOTE: writes the .pyc files once
        print(f"{'trace':30s} {'nodes':>7s} {'svg wall':>9s} {'svg cpu':>8s} {'goal':>5s} "
              f"{'before (wall)':>14s}")  # fmt: skip
        for name, (run, nodes) in cases:
            wall, cpu = cli_export(run, folder / "out.svg")
            before = baseline_export(run, args.baseline_timeout)
            ok = wall <= GOAL_SECONDS
            status = status or (0 if ok else 1)
            print(f"{name:30s} {nodes:7d} {wall:7.2f} s {cpu:6.2f} s {'ok' if ok else 'MISS':>5s} "
                  f"{before:>14s}")  # fmt: skip
        print(f"goal: wall <= {GOAL_SECONDS:g} s; wall far above cpu = a loaded machine")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
