"""Deferred graph builds (``Capture(build="lazy")``, the default): a kept step's graph record is
built at its first read, and equals the one built at the end of its backward
(``build="eager"``) whatever the program changes in between: leaf values (an optimizer step),
names, ``.grad`` and the root gradient written in place. Also: no TPX node held while waiting,
the cap on what waits, failed builds, readers in two threads."""

from __future__ import annotations

import gc
import importlib
import io
import json
import threading
import time
import weakref
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tpx as tp
import tpx_inspect
from tests.helpers.scripts import train_mlp_steps
from tpx_inspect import _build, _deferred
from tpx_inspect._deferred import DeferredBuildError
from tpx_inspect._pending import LAZY

capture_module = importlib.import_module("tpx_inspect.capture")


def _saved(trace: Any, path: Path) -> tuple[Any, dict[str, bytes]]:
    """The saved JSON (minus names of files, hashes and dates) and the sidecar's arrays."""
    tpx_inspect.save(trace, str(path))

    def strip(o: Any) -> Any:
        if isinstance(o, dict):
            drop = ("sidecar", "sha256", "created", "digest")
            return {k: strip(v) for k, v in o.items() if k not in drop}
        return [strip(v) for v in o] if isinstance(o, list) else o

    side = zipfile.ZipFile(path.with_suffix(".npz"))
    arrays = {n: np.load(io.BytesIO(side.read(n))) for n in side.namelist()}
    return strip(json.loads(path.read_text())), {
        n: (a.dtype.str, a.shape, a.tobytes()) for n, a in arrays.items()
    }


def _both(script: Callable[[], Any], tmp_path: Path, **options: Any) -> tuple[Any, Any]:
    """``script`` captured eagerly and deferred, each trace read after it ended."""
    traces = []
    for mode in ("eager", "lazy"):
        with tpx_inspect.capture(timing=False, build=mode, **options) as cap:
            script()
        traces.append(cap.trace)
    return (
        _saved(traces[0], tmp_path / "eager.json"),
        _saved(traces[1], tmp_path / "lazy.json"),
    )


def test_build_mode_is_checked() -> None:
    with pytest.raises(ValueError, match=r"build must be one of \('lazy', 'eager'\)"):
        tpx_inspect.capture(build="later")


def test_a_kept_step_is_built_at_its_first_read() -> None:
    with tpx_inspect.capture() as cap:
        w = tp.ones((2, 2), requires_grad=True)
        (w * 2).sum().backward()
        assert not cap._graphs and len(cap._queue.entries) == 1
    assert [g.step for g in cap.graphs] == [0] and not cap._queue.entries


def test_optimizer_steps_after_backward_do_not_change_the_trace(tmp_path: Path) -> None:
    # NOTE: Adam writes the parameters in place after every backward; the trace is read after
    # the last step (a build reading the leaves then would see the updated values)
    eager, lazy = _both(lambda: train_mlp_steps(4), tmp_path, policy="all")
    assert eager == lazy


def test_values_written_in_place_after_backward(tmp_path: Path) -> None:
    def script() -> None:
        w = tp.asarray(np.arange(6.0).reshape(2, 3), requires_grad=True)
        w.name = "w"
        h = w * 3.0
        h.retain_grad()
        g = tp.asarray(np.full((2, 3), 0.5))
        (h.tanh() + w).backward(gradient=g)
        g.mul_(7.0)  # the root gradient given to backward
        w.grad.mul_(-2.0)  # the leaf's .grad
        h.grad.zero_()  # a retained .grad
        with tp.no_grad():
            w.sub_(tp.ones((2, 3)))  # the leaf's value, as an optimizer writes it
        w.name = "renamed"  # its label

    eager, lazy = _both(script, tmp_path, policy="all", values="all")
    assert eager == lazy
    structures = json.dumps(lazy[0]["runs"][0]["structures"])
    assert '"w"' in structures and "renamed" not in structures


def test_the_root_gradient_written_in_place_is_copied(tmp_path: Path) -> None:
    # NOTE: the given gradient passes unchanged through add's rule into the held records
    def script() -> None:
        x = tp.ones(3, requires_grad=True)
        g = tp.asarray(np.array([1.0, 2.0, 3.0]))
        (x + 1.0).backward(gradient=g)
        g.zero_()

    eager, lazy = _both(script, tmp_path, values="all")
    assert eager == lazy


def test_a_waiting_step_holds_no_tpx_node() -> None:
    with tpx_inspect.capture() as cap:
        w = tp.ones((2, 2), requires_grad=True)
        loss = (w * 2).tanh().sum()
        nodes = [weakref.ref(loss.grad_fn), weakref.ref(loss.grad_fn.edges[0])]
        loss.backward()
        del loss
        gc.collect()
    assert [r() for r in nodes] == [None, None] and len(cap._queue.entries) == 1
    assert [n.kind for n in cap.trace.graphs[0].nodes] == ["leaf", "op", "op", "loss"]


def _steps(n: int) -> None:
    w = tp.ones((3, 3), requires_grad=True)
    for _ in range(n):
        (w * 2.0).sum().backward()


def test_the_waiting_steps_are_capped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_deferred, "MAX_DEFERRED_NODES", 7)  # each step has 3 nodes
    with tpx_inspect.capture("all") as cap:
        held = []
        for _ in range(6):
            _steps(1)
            held.append((len(cap._queue.entries), cap._queue.nodes, len(cap._graphs)))
    assert held == [(1, 3, 0), (2, 6, 0), (2, 6, 1), (2, 6, 2), (2, 6, 3), (2, 6, 4)]
    assert [g.id for g in cap.trace.graphs] == list(range(6))
    # NOTE: a step holds the copy of its leaf and its gradients (3x3 float32, 36 bytes each)
    with tpx_inspect.capture("all") as cap:
        _steps(1)
        one = cap._queue.nbytes
    assert 3 * 36 <= one < 10 * 36
    monkeypatch.setattr(_deferred, "MAX_DEFERRED_BYTES", one + one // 2)
    with tpx_inspect.capture("all") as cap:
        _steps(3)
        assert len(cap._queue.entries) == 1 and cap._queue.nbytes == one
        big = tp.ones((10, 10), requires_grad=True)
        (big * tp.asarray(np.ones((10, 10)))).sum().backward()  # a 800-byte constant
        assert not cap._queue.entries and cap._queue.nbytes == 0
    eager, lazy = _both(lambda: _steps(5), tmp_path, policy="all")
    assert eager == lazy


def _failing_step(monkeypatch: pytest.MonkeyPatch, bad: int) -> None:
    build = _build.GraphBuilder.build

    def failing(self: Any, **kw: Any) -> Any:
        if kw["step"] == bad:
            raise RuntimeError("planted")
        return build(self, **kw)

    monkeypatch.setattr(_build.GraphBuilder, "build", failing)


def test_a_failed_build_names_its_step_and_keeps_the_others(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _failing_step(monkeypatch, bad=1)
    with tpx_inspect.capture("all") as cap:
        _steps(3)
    with pytest.raises(DeferredBuildError, match=r"step 1 \(graph 1\).*RuntimeError: planted"):
        _ = cap.trace
    assert [(g.id, g.step) for g in cap.trace.graphs] == [(0, 0), (1, 2)]
    # NOTE: eager raises at the backward that caused it
    with pytest.raises(RuntimeError, match="planted"), tpx_inspect.capture("all", build="eager"):
        _steps(3)
    # NOTE: with path=, the run is saved on exit all the same, the failure as its error
    path = tmp_path / "run.json"
    with pytest.raises(DeferredBuildError), tpx_inspect.capture("all", path=str(path)):
        _steps(3)
    run = tpx_inspect.load(str(path)).runs[0]
    assert [g.step for g in run.graphs] == [0, 2] and run.error.type == "DeferredBuildError"


def test_a_crashing_script_saves_every_step_recorded(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    with pytest.raises(ZeroDivisionError), tpx_inspect.capture("all", path=str(path)):
        _steps(2)
        raise ZeroDivisionError("planted")
    run = tpx_inspect.load(str(path)).runs[0]
    assert [g.step for g in run.graphs] == [0, 1] and run.error.type == "ZeroDivisionError"


def test_two_threads_reading_build_each_graph_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    entry = capture_module.Capture._build_entry

    def slow(self: Any, e: Any) -> Any:
        built.append(e.step)
        time.sleep(0.01)  # NOTE: widens the window in which the other thread reads
        return entry(self, e)

    monkeypatch.setattr(capture_module.Capture, "_build_entry", slow)
    with tpx_inspect.capture("all") as cap:
        _steps(4)
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(len(cap.graphs))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == [0, 1, 2, 3] and seen == [4, 4]


def test_add_and_checkpoints_keep_the_eager_ids(tmp_path: Path) -> None:
    path = tmp_path / "ck.json"
    with tpx_inspect.capture("all", checkpoint=str(path)) as cap:
        _steps(1)
        assert len(tpx_inspect.load(str(path)).graphs) == 1  # the checkpoint built it
        _steps(1)
        x = tp.ones(2, requires_grad=True)
        g = cap.add((x * 2).sum())
    assert g.id == 2 and [(h.id, h.kind) for h in cap.trace.graphs] == [
        (0, "backward"), (1, "backward"), (2, "roots"),
    ]  # fmt: skip


def test_run_script_reports_a_failed_deferred_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tpx_inspect._run import run_script

    _failing_step(monkeypatch, bad=0)
    script = tmp_path / "steps.py"
    script.write_text(
        "import tpx as tp\nw = tp.ones(2, requires_grad=True)\n"
        "for _ in range(2):\n    (w * 2).sum().backward()\n"
    )
    result = run_script(str(script), [], output=str(tmp_path / "t.json"), policy="all")
    assert isinstance(result.error, DeferredBuildError) and result.exit_code == 1
    run = tpx_inspect.load(str(tmp_path / "t.json")).runs[0]
    assert [g.step for g in run.graphs] == [1] and run.error.type == "DeferredBuildError"


@pytest.mark.parametrize(
    ("shape", "as_summary"),
    [((100, 200), True), ((50, 100), False)],
    ids=["over-LAZY-summarized", "up-to-LAZY-copied"],
)
def test_a_leaf_never_kept_waits_as_its_summary_or_copy(
    tmp_path: Path, shape: tuple[int, int], as_summary: bool
) -> None:
    # NOTE: more elements than value_limit 4,096: the build keeps only its summary. Past
    # LAZY (16,384) the waiting step holds that summary instead of a copy; up to LAZY it holds
    # a copy (a tenth of the statistics' cost), summarized at the build. The traces still
    # equal the eager ones, and the in-place writes after the backward are not seen.
    def script() -> None:
        n = shape[0] * shape[1]
        big = tp.asarray(np.linspace(-1.0, 1.0, n).reshape(shape), requires_grad=True)
        small = tp.ones((2, 2), requires_grad=True)
        ((big * 2.0).sum() + (small * 3.0).sum()).backward()
        with tp.no_grad():
            big.mul_(-4.0)
            small.mul_(-4.0)

    assert shape[0] * shape[1] > 4096 and (shape[0] * shape[1] > LAZY) == as_summary
    with tpx_inspect.capture() as cap:
        script()
        snaps = sorted(cap._queue.entries[0].leaves.values(), key=lambda s: s.shape)
    kinds = [(s.value is None, s.summary is None) for s in snaps]
    assert kinds == [(False, True), (True, False) if as_summary else (False, True)]
    eager, lazy = _both(script, tmp_path)
    assert eager == lazy


def test_two_threads_recording_keep_every_step_in_order() -> None:
    with tpx_inspect.capture("all", threads="all") as cap:
        workers = [threading.Thread(target=_steps, args=(5,)) for _ in range(2)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    graphs = cap.trace.graphs
    assert [g.id for g in graphs] == list(range(10))
    assert sorted(g.step for g in graphs) == list(range(10))
    assert all(len(g.nodes) == 3 for g in graphs) and len({g.structure for g in graphs}) == 1


def test_a_kept_value_counts_once_against_the_byte_cap() -> None:
    # NOTE: a _Frozen kept by the policy holds one copy, read by its lazy summary and kept as
    # its value: two slots, one array
    from tpx_inspect._pending import OUT, _Frozen, pending_record

    a = np.ones(1000, np.float32)
    kept, summarized = _Frozen(a, lambda v: True), _Frozen(a, lambda v: False)
    base = pending_record(0.0, None, [None, a], None, 0)
    for frozen in (kept, summarized):
        p = (*base[:OUT], frozen, *base[OUT + 1 :])
        assert _deferred.record_bytes(p) == 2 * a.nbytes  # the output's copy and the constant
