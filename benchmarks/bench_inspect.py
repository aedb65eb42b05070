"""Benchmarks of tpx_inspect at real-model scale, from one run: capture overhead on the MLP
training loop and on a 100,000-op (4, 4) chain, save/load of a 100,000-node graph (times and
file sizes), DOT export of it, and the graph checks per node at 1k/10k/100k nodes in one
process and with a 2-worker Dask LocalCluster (speed-up, same findings).

    python benchmarks/bench_inspect.py [--quick] [--no-cluster]   # or: benchmarks/run.py inspect

Goals (issue 13): 100k-op chain captured <= 2x its uncaptured time, MLP <= 1.15x; save and
load of a 100,000-node trace <= 0.5 s each; all graph checks on the 100,000-node graph of
benchmarks/bench_checks.py <= 20 s CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import tpx as tp  # noqa: E402
import tpx_inspect  # noqa: E402
from tpx_inspect import _json  # noqa: E402
from tpx_inspect.export import to_dot  # noqa: E402

STEPS = 200
MLP_ROUNDS = 11
"""Rounds of the MLP row of :func:`main` (each: one capture, its STEPS steps run in chunks,
each chunk paused and captured: see :func:`bench_capture`). Before the chunks (r20), a round
timed 200 steps plain, then 200 captured: on a shared 2-core machine one round's ratio ranged
over +-30%, and three rounds' median did not say on which side of 1.15x the step was."""
CHUNK = 5
"""Steps per chunk of :func:`bench_capture` (a pair of chunks: ~25 ms of CPU on the MLP)."""


def mlp_loop() -> tuple[Callable[..., None], Any]:
    """``run(steps, start=0)`` of the MLP training example (examples/train_mlp.py; steps
    ``start`` on read the batches of those steps), and its params."""
    from train_mlp import batches, build_model

    import tpx.nn.functional as F
    import tpx.optim as optim

    model = build_model()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    data = batches()
    cached = [next(data) for _ in range(STEPS)]

    def run(steps: int, start: int = 0) -> None:
        for i in range(start, start + steps):
            x, y = cached[i % len(cached)]
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

    return run, list(model.named_parameters())


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def bench_capture(repeats: int = 7, chunk: int = CHUNK) -> dict[str, float]:
    """The MLP's STEPS training steps captured (default policy) against uncaptured, timed in
    short pairs of one run (one drift of the machine lasts longer than a pair): each round is
    one capture whose STEPS steps run ``chunk`` at a time, each chunk's steps once with the
    capture paused (plain: no observer of TPX) and once captured, in ABBA order (a linear
    drift cancels); CPU and wall seconds per chunk. The captured chunks pay the whole capture
    (its steps are those of a STEPS-step capture: kept steps 0-9 and 100 included); the paused
    ones none (checked in round 21: no observer registered, the same leaf-gradient copies, GC
    collections and instructions per step as with no capture alive); the first read of each
    round's trace is timed apart, and added in the end-to-end ratio.

    ``ratio_cpu`` (``ratio``: wall): captured over plain seconds summed over all rounds;
    ``pair_ratio_cpu_median`` with quartiles ``_q1``/``_q3``: of the pairs' CPU ratios;
    ``ratio_cpu_min``/``_max``: of the rounds' ratios; ``not_kept_ratio_cpu``: of the chunks
    whose steps the policy does not keep (each may still be kept for a NaN/Inf), and
    ``kept_share``: what the chunks holding a kept step (0-9 and 100) add to the ratio, as a
    fraction of all plain seconds (the two split the overhead). ``*_s``: medians of the rounds' sums
    (STEPS steps). The cyclic GC's CPU seconds in each kind of chunk (``gc.callbacks``) say
    whether the GC is part of the overhead."""
    run, params = mlp_loop()
    run(20)  # NOTE: both paths warmed up: plain steps, then a capture and its first read
    with tpx_inspect.capture(params=params) as cap:
        run(20)
    _ = cap.trace
    rounds = [_chunked_round(run, params, chunk) for _ in range(repeats)]
    sums = {k: [r[0][k] for r in rounds] for k in rounds[0][0]}
    m = {k: statistics.median(v) for k, v in sums.items()}
    pairs = sorted(p for r in rounds for p in r[1])
    q1, median, q3 = statistics.quantiles(pairs, n=4)
    by_round = [c / p for c, p in zip(sums["cap_cpu"], sums["plain_cpu"])]
    return {
        "plain_s": m["plain"], "captured_s": m["cap"],
        "ratio": sum(sums["cap"]) / sum(sums["plain"]),
        "plain_cpu_s": m["plain_cpu"], "captured_cpu_s": m["cap_cpu"],
        "ratio_cpu": sum(sums["cap_cpu"]) / sum(sums["plain_cpu"]),
        "pair_ratio_cpu_median": median, "pair_ratio_cpu_q1": q1, "pair_ratio_cpu_q3": q3,
        "pairs": float(len(pairs)), "chunk": float(chunk),
        "ratio_cpu_min": min(by_round), "ratio_cpu_max": max(by_round),
        "plain_gc_s": m["plain_gc"], "captured_gc_s": m["cap_gc"],
        "first_read_cpu_s": m["read_cpu"],
        "end_to_end_ratio_cpu": (sum(sums["cap_cpu"]) + sum(sums["read_cpu"]))
        / sum(sums["plain_cpu"]),
        "not_kept_ratio_cpu": (sum(sums["cap_cpu"]) - sum(sums["kept_cap_cpu"]))
        / (sum(sums["plain_cpu"]) - sum(sums["kept_plain_cpu"])),
        "kept_share": (sum(sums["kept_cap_cpu"]) - sum(sums["kept_plain_cpu"]))
        / sum(sums["plain_cpu"]),
    }  # fmt: skip


def _chunked_round(
    run: Callable[..., None], params: Any, chunk: int
) -> tuple[dict[str, float], list[float]]:
    """One round of :func:`bench_capture`: seconds summed per kind (``plain``, ``cap``, their
    ``_cpu`` and ``_gc``, ``read_cpu``: the first read, and ``kept_plain_cpu``/``kept_cap_cpu``:
    the chunks holding a step that the policy keeps) and each pair's CPU ratio."""
    names = ("plain", "plain_cpu", "plain_gc", "cap", "cap_cpu", "cap_gc")
    total = dict.fromkeys((*names, "kept_plain_cpu", "kept_cap_cpu"), 0.0)
    ratios = []
    with tpx_inspect.capture(params=params) as cap:
        for i, start in enumerate(range(0, STEPS, chunk)):
            cpu = {}
            for kind in ("plain", "cap") if i % 2 == 0 else ("cap", "plain"):
                pause = cap.paused() if kind == "plain" else contextlib.nullcontext()
                with pause, _gc_clock() as gc_s:
                    _, wall, cpu[kind] = _timed(lambda: run(chunk, start))  # noqa: B023
                total[kind] += wall
                total[kind + "_cpu"] += cpu[kind]
                total[kind + "_gc"] += gc_s[0]
            if any(map(cap.policy.wants, range(start, start + chunk))):
                total["kept_plain_cpu"] += cpu["plain"]
                total["kept_cap_cpu"] += cpu["cap"]
            ratios.append(cpu["cap"] / cpu["plain"])
    total["read_cpu"] = _timed(lambda: cap.trace)[2]
    return total, ratios


def chain(n: int) -> tpx_inspect.Trace:
    """A trace of one n-op chain."""
    with tpx_inspect.capture("all", values="none") as cap:
        x = tp.ones(4, requires_grad=True)
        y = x
        for _ in range(n):
            y = y * 1.0
        y.sum().backward()
    return cap.trace


def small_chain(n: int) -> tpx_inspect.Trace:
    """A trace of an n-op (4, 4) chain captured as users capture (default policy,
    ``values="small"``: each node's small values kept, ~3 per node)."""
    with tpx_inspect.capture(values="small") as cap:
        _chain_run(n)
    return cap.trace


def bench_save_load(
    n: int = 100_000, dot: bool = False, rounds: int = 5, values: str = "none"
) -> dict[str, float]:
    """Seconds (wall, and CPU of this process) to capture, save, load (and with ``dot``
    export DOT) of an n-node chain, and to read its header (``format.read_header``). Save and
    load alternate for ``rounds`` rounds: the median and best wall seconds and the best and
    median CPU seconds of each are given (the machine may be shared: CPU time is the steadier
    figure; a load's CPU counts its sidecar thread too). ``values="none"``: the benchmark
    trace (:func:`chain`); ``"small"``: the default capture of a (4, 4) chain
    (:func:`small_chain`). Saves use the default ``compress=None``; one more save with
    ``compress=True`` (every sidecar member deflated) gives its time and size."""
    from tpx_inspect.format import read_header

    out: dict[str, float] = {}
    make = (lambda: chain(n - 2)) if values == "none" else (lambda: small_chain(n - 2))
    trace, out["capture_s"], out["capture_cpu_s"] = _timed(make)
    out["nodes"] = float(len(trace.graphs[0].nodes))
    out["kept_values"] = float(len(trace.graphs[0].values))
    saves: list[tuple[float, float]] = []
    loads: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "chain.json")
        for _ in range(rounds):
            saves.append(_timed(lambda: tpx_inspect.save(trace, path))[1:])
            loaded = None  # NOTE: the last round's trace is freed before the next load
            loaded, wall, cpu = _timed(lambda: tpx_inspect.load(path))
            loads.append((wall, cpu))
        out["json_mb"] = os.path.getsize(path) / 1e6
        out["npz_mb"] = os.path.getsize(path[:-5] + ".npz") / 1e6
        # NOTE: the sidecar with every member deflated (save(compress=True), the smallest)
        whole = os.path.join(d, "deflated.json")
        _, out["save_deflated_s"], out["save_deflated_cpu_s"] = _timed(
            lambda: tpx_inspect.save(trace, whole, compress=True)
        )
        out["npz_deflated_mb"] = os.path.getsize(whole[:-5] + ".npz") / 1e6
        _, out["header_s"], out["header_cpu_s"] = _timed(lambda: read_header(path))
        out.update(load_parts(path))
    for name, times in (("save", saves), ("load", loads)):
        out[f"{name}_s"] = statistics.median(w for w, _ in times)
        out[f"{name}_best_s"] = min(w for w, _ in times)
        out[f"{name}_cpu_s"] = min(c for _, c in times)
        out[f"{name}_cpu_median_s"] = statistics.median(c for _, c in times)
    out["orjson"] = float(_json.orjson is not None)
    if dot:
        _, out["dot_s"], out["dot_cpu_s"] = _timed(lambda: to_dot(loaded.graphs[0]))
    return out


def load_parts(path: str) -> dict[str, float]:
    """CPU seconds of the steps of a load (``tpx_inspect._trace_load``), each timed alone with
    the collector paused as ``load`` pauses it: where the load time goes."""
    import gc

    from tpx_inspect import _trace_load as tl
    from tpx_inspect._safe_read import LoadLimits

    limits, was = LoadLimits.from_env(), gc.isenabled()
    gc.disable()
    try:
        doc, _, parse = _timed(lambda: tl._read_json(path, limits))
        _, _, schema = _timed(lambda: tl._schema_rule(doc["version"]).check(doc))
        arrays, _, side = _timed(lambda: tl.read_sidecar(path, doc, limits))
        store, _, values = _timed(lambda: tl._load_values(arrays, path))
        major = doc["version"]
        _, _, records = _timed(
            lambda: [tl._load_run(r, arrays, store, set(), major) for r in doc["runs"]]
        )
    finally:
        if was:
            gc.enable()
    return {"load_parse_s": parse, "load_schema_s": schema, "load_sidecar_s": side,
            "load_values_s": values, "load_records_s": records}  # fmt: skip


def _chain_run(n: int) -> None:
    x = tp.asarray(np.random.default_rng(0).standard_normal((4, 4)), requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 0.999
    y.sum().backward()


def bench_chain_capture(n: int = 100_000) -> dict[str, float]:
    """Per-op cost of an n-op (4, 4) chain (forward + backward) without and with capture
    (default policy, ``values="small"``), CPU seconds, the faster of two interleaved runs
    each, and the cyclic GC's share of each (timed by ``gc.callbacks``); then the first read
    of the captured trace (``cap.trace``: the graph is built then, see ``Capture(build=)``)
    and the end-to-end ratio (capture + first read vs uncaptured). Memory per node, in a
    separate run (tracemalloc slows Python down): peak while capturing, held from the end of
    the capture until the first read, and the peak of the first read."""
    import tracemalloc

    _chain_run(1000)  # warm up
    plain = captured = (float("inf"), 0.0)
    first = float("inf")
    for _ in range(2):  # NOTE: interleaved, the fastest of each (the machine may be shared)
        plain = min(plain, _gc_timed(lambda: _chain_run(n)))
        with tpx_inspect.capture(values="small") as cap:
            captured = min(captured, _gc_timed(lambda: _chain_run(n)))
        first = min(first, _timed(lambda: cap.trace)[2])
        del cap
    m = n // 10
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    with tpx_inspect.capture(values="small") as cap:
        _chain_run(m)
        peak = tracemalloc.get_traced_memory()[1] - base
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.reset_peak()
    _ = cap.trace
    read_peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return {"plain_us": plain[0] / n * 1e6, "captured_us": captured[0] / n * 1e6,
            "plain_gc_us": plain[1] / n * 1e6, "captured_gc_us": captured[1] / n * 1e6,
            "ratio": captured[0] / plain[0], "first_read_us": first / n * 1e6,
            "end_to_end_ratio": (captured[0] + first) / plain[0],
            "peak_bytes_per_node": peak / m, "held_bytes_per_node": held / m,
            "read_peak_bytes_per_node": read_peak / m}  # fmt: skip


def _gc_timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """CPU seconds of ``fn()`` and of the cyclic GC's collections during it."""
    with _gc_clock() as spent:
        cpu = _timed(fn)[2]
    return cpu, spent[0]


@contextlib.contextmanager
def _gc_clock() -> Iterator[list[float]]:
    """``[CPU seconds]`` the cyclic GC's collections take inside the block (filled at exit
    and as they happen)."""
    import gc

    spent, began = [0.0], [0.0]

    def clock(phase: str, info: dict) -> None:
        if phase == "start":
            began[0] = time.process_time()
        else:
            spent[0] += time.process_time() - began[0]

    gc.callbacks.append(clock)
    try:
        yield spent
    finally:
        gc.callbacks.remove(clock)


def bench_live_record(n: int = 10_000) -> dict[str, float]:
    """CPU seconds of recording the bench_checks.py graph of n nodes live for the checks
    (``checks.capture_call``: ``values="raw"``, no statistics), against the same recording
    keeping statistics and previews of every value (``values="all"``, what it did before);
    the fastest of three interleaved runs each."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_checks import build

    from tpx_inspect.checks import capture_call
    from tpx_inspect.checks.record import Recording

    f, inputs = build(n)
    capture_call(f, inputs)  # warm up
    best = {"raw": float("inf"), "all": float("inf")}
    init = Recording.__init__

    def with_stats(self: Recording, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.values, self._builder.stats = "all", True

    for _ in range(3):
        best["raw"] = min(best["raw"], _timed(lambda: capture_call(f, inputs))[2])
        Recording.__init__ = with_stats  # type: ignore[method-assign]
        try:
            best["all"] = min(best["all"], _timed(lambda: capture_call(f, inputs))[2])
        finally:
            Recording.__init__ = init  # type: ignore[method-assign]
    return {"raw_s": best["raw"], "all_s": best["all"], "nodes": float(n)}


def bench_checks(sizes: tuple[int, ...], cluster_nodes: tuple[int, ...] = ()) -> None:
    """CPU seconds of what a user of the checks waits for on the bench_checks.py graph, at each
    size: the graph's check views (made on first use), every graph check, and the kernel
    check's spec replay; their total and per node; at the smallest size also one node at a
    time (the reference, same findings); then the local check on a 2-worker LocalCluster
    against one process."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_checks import build

    from tpx_inspect.checks import LocalOptions, capture_call, kernel_check, run_graph_checks
    from tpx_inspect.checks.runner import GRAPH_CHECKS

    for n in sizes:
        f, inputs = build(n)
        graph = capture_call(f, inputs)
        nodes = len(graph.nodes)
        _, _, views = _timed(lambda g=graph: (g.replay_nodes, g.backwards, g.execution(0)))
        cpu, results = {}, []
        for name in GRAPH_CHECKS:
            report, _, cpu[name] = _timed(lambda g=graph, c=name: run_graph_checks(g, (c,)))
            results += report.results
        _, _, kernel = _timed(lambda g=graph: kernel_check(g, include_spec=True))
        checks = sum(cpu.values())
        total = views + checks + kernel
        goal = "" if n < 100_000 else f" (goal <= 20 s: {'met' if total <= 20 else 'not met'})"
        print(f"checks, {nodes} nodes, CPU: check views {views:.2f} s + all graph checks "
              f"{checks:.2f} s ({', '.join(f'{c} {s:.2f}' for c, s in cpu.items())}) + kernel "
              f"spec replay {kernel:.2f} s = total {total:.2f} s, {total / nodes * 1e6:.0f} "
              f"us/node{goal}; findings {sum(len(r.findings) for r in results)}, skips "
              f"{sum(r.skipped for r in results)}")  # fmt: skip
        if n == sizes[0]:
            one = LocalOptions(batch_size=1)
            ref, _, ref_cpu = _timed(lambda g=graph, o=one: run_graph_checks(g, local_options=o))
            same = [r.findings for r in ref.results] == [r.findings for r in results]
            print(f"  node by node (batch_size=1, the reference): {ref_cpu:.2f} s CPU -> "
                  f"batched {ref_cpu / checks:.1f}x faster, same findings: {same}")  # fmt: skip
        del graph
    for n in cluster_nodes:
        bench_cluster(n)


def bench_cluster(n: int, rounds: int = 3) -> None:
    """The local check of an n-node graph in one process and on a 2-worker LocalCluster,
    alternating, ``rounds`` times: wall seconds (the speed-up, and its median), same findings,
    and CPU seconds (the client's process, each worker process, their sum against one
    process: on a loaded machine the wall figures say little), then where the cluster's time
    goes."""
    from bench_checks import build

    from tpx_inspect.checks import LocalOptions, capture_call, local_check
    from tpx_inspect.checks.cluster import cluster_outcomes, connect
    from tpx_inspect.checks.local import backward_order, check_group, groups_of, replayable

    f, inputs = build(n)
    graph = capture_call(f, inputs)
    local_check(graph)  # NOTE: the graph's views for the checks are made once, not timed
    with connect(workers=2) as client:
        local_check(graph, client=client)  # NOTE: warm: workers import tpx once
        speedups = []
        for _ in range(rounds):
            alone, wall1, cpu1 = _timed(lambda: local_check(graph))
            before = client.run(time.process_time)
            spread, wall2, cpu2 = _timed(lambda: local_check(graph, client=client))
            after = client.run(time.process_time)
            workers = sorted(after[k] - before[k] for k in after)
            same = (alone.findings, alone.skips, alone.notes) == (spread.findings, spread.skips,
                                                                 spread.notes)  # fmt: skip
            print(
                f"local check, {len(graph.nodes)} nodes (load {os.getloadavg()[0]:.1f}): 1 "
                f"process {wall1:.2f} s wall / {cpu1:.2f} s CPU; 2-worker LocalCluster "
                f"{wall2:.2f} s wall (speed-up {wall1 / wall2:.2f}x), CPU: client {cpu2:.2f} s, "
                f"workers {' + '.join(f'{c:.2f}' for c in workers)} = {sum(workers):.2f} s "
                f"({sum(workers) / cpu1:.2f}x one process's), same findings: {same}"
            )
            speedups.append(wall1 / wall2)
        print(f"  median speed-up of {rounds} rounds at {len(graph.nodes)} nodes: "
              f"{statistics.median(speedups):.2f}x (goal > 1x)")  # fmt: skip
        stats: dict[str, Any] = {}
        _, todo = replayable(graph, backward_order(graph))
        groups = groups_of(todo, LocalOptions())  # NOTE: as local_check: made while shipped
        cluster_outcomes(client, groups, LocalOptions(), check_group, stats=stats, total=len(todo))
    print(
        f"  breakdown of a cluster run (wall): the client's sending thread packs "
        f"{stats['pack_s']:.2f} s + scatters {stats['scatter_s']:.2f} s (overlapping the "
        f"checks; {stats['pooled_bytes'] / 2**20:.0f} MiB of distinct arrays shipped), then "
        f"waiting after the last group "
        f"{stats['run_s']:.2f} s; {stats['wall_s']:.2f} s in all; nodes checked on the workers "
        f"{stats['shipped_nodes']} (check CPU {sum(stats['task_cpu_s']):.2f} s in "
        f"{len(stats['task_cpu_s'])} tasks), by the client while they were busy "
        f"{stats['here_nodes']}"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmarks and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x smaller sizes")
    parser.add_argument("--no-cluster", action="store_true")
    parser.add_argument("--dot", action="store_true", help="also time the DOT export")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print(f"BLAS: {_blas()}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    ch = bench_chain_capture(100_000 // scale)
    print(
        f"capture, {100_000 // scale}-op (4, 4) chain, default policy, values=small (CPU): "
        f"{ch['plain_us']:.1f} -> {ch['captured_us']:.1f} us/op ({ch['ratio']:.2f}x, goal "
        f"<= 2x); of which cyclic GC {ch['plain_gc_us']:.1f} -> {ch['captured_gc_us']:.1f} "
        f"us/op; peak capture memory {ch['peak_bytes_per_node'] / 1024:.2f} KiB/node"
    )
    print(
        f"  first read of that trace (the graph built then; Capture(build='lazy')): "
        f"{ch['first_read_us']:.1f} us/op; end to end (capture + first read): "
        f"{ch['captured_us'] + ch['first_read_us']:.1f} us/op ({ch['end_to_end_ratio']:.2f}x); "
        f"memory held until the first read {ch['held_bytes_per_node'] / 1024:.2f} KiB/node, "
        f"peak of the first read {ch['read_peak_bytes_per_node'] / 1024:.2f} KiB/node"
    )
    live = bench_live_record(10_000 // scale)
    print(
        f"live recording for the checks, {int(live['nodes'])}-node bench_checks graph (CPU): "
        f"values=raw {live['raw_s']:.2f} s vs with statistics (values=all) {live['all_s']:.2f} "
        f"s ({live['all_s'] / live['raw_s']:.2f}x)"
    )
    cap = bench_capture(repeats=MLP_ROUNDS)
    print(
        f"capture overhead (MLP, {STEPS} steps, default policy): wall {cap['plain_s']:.3f} -> "
        f"{cap['captured_s']:.3f} s ({cap['ratio']:.2f}x), CPU {cap['plain_cpu_s']:.3f} -> "
        f"{cap['captured_cpu_s']:.3f} s ({cap['ratio_cpu']:.2f}x; rounds "
        f"{cap['ratio_cpu_min']:.2f}-{cap['ratio_cpu_max']:.2f}x) (goal <= 1.15x); cyclic GC "
        f"{cap['plain_gc_s'] * 1e3:.1f} -> {cap['captured_gc_s'] * 1e3:.1f} ms"
    )
    print(
        f"  timed in {int(cap['pairs'])} pairs of {int(cap['chunk'])}-step chunks, paused "
        f"(plain) and captured in ABBA order within one capture per round: the ratios above "
        f"are of the sums; the pairs' CPU ratios: median {cap['pair_ratio_cpu_median']:.2f}x "
        f"(quartiles {cap['pair_ratio_cpu_q1']:.2f}-{cap['pair_ratio_cpu_q3']:.2f}x); the "
        f"chunks of steps not kept {cap['not_kept_ratio_cpu']:.3f}x, the chunks holding the kept "
        f"steps (0-9, 100) add {cap['kept_share']:.3f} to the ratio"
    )
    print(
        f"  first read of that trace (its kept steps' graphs built then): CPU "
        f"{cap['first_read_cpu_s'] * 1e3:.1f} ms; end to end (capture + first read) "
        f"{cap['end_to_end_ratio_cpu']:.2f}x"
    )
    sl = bench_save_load(100_000 // scale, args.dot)
    json_lib = "orjson" if sl["orjson"] else "stdlib json"
    print(
        f"{int(sl['nodes'])}-node chain (values=none; wall median / wall best / CPU best / CPU "
        f"median of 5 alternating rounds): capture {sl['capture_s']:.2f} / "
        f"{sl['capture_cpu_s']:.2f} s, save {sl['save_s']:.2f} / {sl['save_best_s']:.2f} / "
        f"{sl['save_cpu_s']:.2f} / {sl['save_cpu_median_s']:.2f} s ({sl['json_mb']:.1f} MB JSON "
        f"+ {sl['npz_mb']:.1f} MB npz), load {sl['load_s']:.2f} / {sl['load_best_s']:.2f} / "
        f"{sl['load_cpu_s']:.2f} / {sl['load_cpu_median_s']:.2f} s (goal <= 0.5 s each; "
        f"{json_lib}; the sidecar is read on a second thread during the schema check, so wall "
        f"< CPU on a free core); header only (read_header) {sl['header_cpu_s']:.3f} s CPU; "
        + _deflated(sl)
        + (f", DOT {sl['dot_s']:.2f} / {sl['dot_cpu_s']:.2f} s" if args.dot else "")
    )
    _print_load_steps(sl)
    small = bench_save_load(100_000 // scale, values="small")
    print(
        f"{int(small['nodes'])}-node (4, 4) chain, default capture (values=small, "
        f"{small['kept_values']:.0f} kept values; same rounds and columns): save "
        f"{small['save_s']:.2f} / {small['save_best_s']:.2f} / {small['save_cpu_s']:.2f} / "
        f"{small['save_cpu_median_s']:.2f} s ({small['json_mb']:.1f} MB JSON + "
        f"{small['npz_mb']:.1f} MB npz), load {small['load_s']:.2f} / {small['load_best_s']:.2f}"
        f" / {small['load_cpu_s']:.2f} / {small['load_cpu_median_s']:.2f} s (goal <= 0.5 s each); "
        + _deflated(small)
    )
    _print_load_steps(small)
    sizes = tuple(k // scale for k in (1_000, 10_000, 100_000) if k // scale >= 100)
    bench_checks(sizes, () if args.no_cluster else (10_000 // scale, 100_000 // scale))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return {"capture": cap, "chain": ch, "save_load": sl, "save_load_small": small}


def _deflated(sl: dict[str, float]) -> str:
    return (
        f"every sidecar member deflated (compress=True): save {sl['save_deflated_s']:.2f} s "
        f"(CPU {sl['save_deflated_cpu_s']:.2f} s), {sl['npz_deflated_mb']:.1f} MB npz"
    )


def _print_load_steps(sl: dict[str, float]) -> None:
    print(
        f"  load steps alone, one thread (CPU): read+parse {sl['load_parse_s']:.2f} s, schema "
        f"{sl['load_schema_s']:.2f} s, sidecar {sl['load_sidecar_s']:.2f} s, value index "
        f"{sl['load_values_s']:.2f} s, records {sl['load_records_s']:.2f} s"
    )


def _blas() -> str:
    from threadpoolctl import threadpool_info

    return ", ".join(f"{i['internal_api']} {i['num_threads']} thread(s)" for i in threadpool_info())


if __name__ == "__main__":
    from threadpoolctl import threadpool_limits

    # NOTE: one BLAS thread, as benchmarks/run.py pins it: with OpenBLAS's default of one
    # thread per core, a 2-core machine's CPU seconds count a spinning second thread
    with threadpool_limits(limits=1):
        main()
