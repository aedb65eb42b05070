"""A capture and other threads: by default only the capturing thread is recorded; with
``threads="all"`` every thread is, and concurrent backward passes stay separate graphs."""

from __future__ import annotations

import threading

import pytest

import tpx as tp
import tpx_inspect


def _step(op: str, meet: threading.Barrier) -> None:
    """One forward and backward whose backward pauses halfway until the other thread's does."""
    x = tp.asarray([0.5, 1.0, 1.5], dtype="float64", requires_grad=True)
    h = getattr(x, op)() * 2.0
    h.register_hook(lambda g: _wait(meet))
    (h * h).sum().backward()
    assert x.grad is not None


def _wait(meet: threading.Barrier) -> None:
    meet.wait(timeout=10)  # returns the thread's index, which a hook must not return


def _run_both(threads: str) -> tpx_inspect.Capture:
    meet = threading.Barrier(2)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            _step("sin", meet)
        except BaseException as e:  # re-raised in the main thread below
            errors.append(e)

    with tpx_inspect.capture("all", threads=threads) as cap:
        t = threading.Thread(target=worker)
        t.start()
        _step("exp", meet)  # both backward passes are in flight at the barrier
        t.join(timeout=20)
    assert not errors and not t.is_alive()
    return cap


def _ops(graph) -> set[str]:
    return {n.op for n in graph.nodes if n.op is not None}


def test_by_default_only_the_capturing_thread_is_recorded():
    cap = _run_both("current")
    graphs = cap.trace.graphs
    assert len(graphs) == 1 and cap.trace.runs[0].steps == 1
    assert _ops(graphs[0]) == {"exp", "mul", "sum"}


def test_all_threads_keep_each_backward_pass_in_its_own_graph():
    cap = _run_both("all")
    graphs = cap.trace.graphs
    assert sorted(sorted(_ops(g)) for g in graphs) == [["exp", "mul", "sum"], ["mul", "sin", "sum"]]
    assert sorted(g.step for g in graphs) == [0, 1]
    for g in graphs:  # every recorded gradient belongs to a node of its own graph
        assert len(g.backward_order) == len(g.nodes)


def test_threads_option_is_checked():
    with pytest.raises(ValueError, match=r"threads must be one of \('current', 'all'\)"):
        tpx_inspect.capture(threads="main")


def test_a_scripts_threads_are_part_of_its_run(tmp_path):
    script = tmp_path / "threaded.py"
    script.write_text(
        "import threading, tpx as tp\n"
        "def work():\n"
        "    x = tp.ones(3, requires_grad=True)\n"
        "    (x.tanh() * 2).sum().backward()\n"
        "t = threading.Thread(target=work); t.start(); t.join()\n"
    )
    result = tpx_inspect.run_script(str(script), policy="all")
    assert result.exit_code == 0, result.error
    assert [sorted(_ops(g)) for g in result.trace.graphs] == [["mul", "sum", "tanh"]]
