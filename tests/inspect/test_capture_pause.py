"""``Capture.paused()``: while paused the capture is no TPX observer, a backward inside is no
step of it (the policy keeps the steps a capture of the unpaused steps alone keeps), and what
crosses a pause follows the documented rules (docs/capture.md, "Pausing")."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import pytest

import tpx as tp
import tpx_inspect
from tests.helpers.load import load_example
from tests.inspect.test_capture_deferred import _saved
from tpx import _observers


def _train(cap: Any, steps: int, probes: bool) -> None:
    """``steps`` Adam steps of the MLP example; with ``probes``, every other one is instead a
    paused gradient probe (forward and backward on a fixed batch, no update): the model and
    the data the training steps see are those of ``steps // 2`` training steps alone."""
    import tpx.nn.functional as F
    import tpx.optim as optim

    mlp = load_example("train_mlp")
    model = mlp.build_model()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    data = mlp.batches()
    px, py = next(mlp.batches(seed=1))
    for i in range(steps):
        if probes and i % 2:
            with cap.paused():
                opt.zero_grad()
                F.cross_entropy(model(px), py).backward()
            continue
        x, y = next(data)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


@pytest.mark.parametrize("build", ["lazy", "eager"])
@pytest.mark.parametrize("policy", [tpx_inspect.DEFAULT_POLICY, "first:3,every:4"])
def test_paused_steps_are_no_steps_of_the_trace(tmp_path: Path, build: str, policy: Any) -> None:
    traces = []
    for steps, probes in ((30, True), (15, False)):
        with tpx_inspect.capture(policy, timing=False, build=build) as cap:
            _train(cap, steps, probes)
        traces.append(cap.trace)
    assert traces[0].runs[0].steps == 15
    assert [g.step for g in traces[0].graphs] == [g.step for g in traces[1].graphs]
    assert _saved(traces[0], tmp_path / "a.json") == _saved(traces[1], tmp_path / "b.json")


def test_while_paused_the_capture_is_no_observer() -> None:
    x = tp.ones(2, requires_grad=True)
    with tpx_inspect.capture() as cap:
        assert cap in _observers.observers
        with cap.paused():
            assert cap not in _observers.observers
            assert _observers.on_node_forward == _observers.on_nodes_executed == ()
            (x * 2).sum().backward()
        assert cap in _observers.observers
    assert cap not in _observers.observers


def test_pauses_nest_and_repeat() -> None:
    x = tp.ones(2, requires_grad=True)
    with tpx_inspect.capture(timing=False) as cap:
        for k in range(3):
            (x * (k + 1)).sum().backward()
            with cap.paused():
                with cap.paused():
                    (x * 10).sum().backward()
                assert cap not in _observers.observers  # the outer pause still holds
                (x * 10).sum().backward()
    assert cap.trace.runs[0].steps == 3
    assert [g.output(g.roots[0]).max for g in cap.trace.graphs] == [2.0, 4.0, 6.0]


def test_a_graph_recorded_before_a_pause_whose_backward_runs_inside_is_not_kept(
    tmp_path: Path,
) -> None:
    x = tp.ones(2, requires_grad=True)
    traces = []
    for early in (True, False):
        with tpx_inspect.capture(timing=False) as cap:
            if early:
                loss = (x * 5).sum()  # recorded while observed
                with cap.paused():
                    loss.backward()  # not seen: no step
            (x * 2).sum().backward()
        traces.append(cap.trace)
    assert traces[0].runs[0].steps == 1
    assert _saved(traces[0], tmp_path / "a.json") == _saved(traces[1], tmp_path / "b.json")


def _times3(x: Any) -> Any:
    return x * 3  # NOTE: one source line for both captures


def test_nodes_recorded_while_paused_read_as_nodes_made_before_the_capture(
    tmp_path: Path,
) -> None:
    x = tp.ones(2, requires_grad=True)
    traces = []
    for paused in (True, False):
        y = None if paused else _times3(x)
        with tpx_inspect.capture(timing=False) as cap:
            if paused:
                with cap.paused():
                    y = _times3(x)
            (y * 2).sum().backward()
        traces.append(cap.trace)
    g = traces[0].graphs[0]
    assert [n.title for n in g.nodes] == ["leaf", "mul", "mul", "sum"]
    assert g.output(1) is None and g.output(2) is not None  # the unseen node has no value
    assert _saved(traces[0], tmp_path / "a.json") == _saved(traces[1], tmp_path / "b.json")


def test_an_error_inside_a_pause_ends_the_pause() -> None:
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(ZeroDivisionError), tpx_inspect.capture(timing=False) as cap:
        with pytest.raises(KeyError), cap.paused():
            raise KeyError("inside")
        assert cap in _observers.observers
        (x * 2).sum().backward()
        with cap.paused():
            _ = 1 / 0
    run = cap.trace.runs[0]
    assert cap not in _observers.observers
    assert (run.status, run.steps, run.error.type) == ("error", 1, "ZeroDivisionError")


def test_a_capture_not_entered_cannot_be_paused() -> None:
    cap = tpx_inspect.capture()
    with pytest.raises(RuntimeError, match="not active"), cap.paused():
        pass
    with cap:
        pass
    with pytest.raises(RuntimeError, match="not active"), cap.paused():
        pass
    assert cap not in _observers.observers


def test_a_capture_that_ends_while_paused_stays_ended() -> None:
    with contextlib.ExitStack() as stack:
        cap = stack.enter_context(tpx_inspect.capture())
        pause = cap.paused()
        pause.__enter__()
        stack.close()  # the capture ends inside the pause
        pause.__exit__(None, None, None)
    assert cap not in _observers.observers
    assert cap.trace.runs[0].status == "ok"


def test_no_pause_from_a_hook_inside_a_backward_pass() -> None:
    x = tp.ones(2, requires_grad=True)
    with tpx_inspect.capture(timing=False) as cap:

        def hook(g: Any) -> Any:
            with cap.paused():
                return g

        y = x * 2
        y.register_hook(hook)
        with pytest.raises(RuntimeError, match="backward pass is running"):
            y.sum().backward()
        (x * 3).sum().backward()  # the capture goes on
    assert [g.step for g in cap.trace.graphs] == [0, 1]
    assert cap.trace.graphs[1].output(cap.trace.graphs[1].roots[0]).preview == (6.0,)


def test_a_capture_of_its_own_thread_is_paused_by_that_thread_only() -> None:
    errors: list[BaseException] = []

    def pause(cap: Any) -> None:
        try:
            with cap.paused():
                pass
        except RuntimeError as e:
            errors.append(e)

    with tpx_inspect.capture() as cap:
        t = threading.Thread(target=pause, args=(cap,))
        t.start()
        t.join()
        assert cap in _observers.observers
    assert len(errors) == 1 and "own thread" in str(errors[0])
    with tpx_inspect.capture(threads="all") as cap:
        t = threading.Thread(target=pause, args=(cap,))
        t.start()
        t.join()
    assert len(errors) == 1


def test_the_example_of_docs_capture_md_runs() -> None:
    import doctest

    doc = Path(__file__).parents[2] / "docs" / "capture.md"
    result = doctest.testfile(str(doc), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0


def test_a_live_capture_leaves_nodes_recorded_while_paused_out_of_its_rest_graph() -> None:
    x = tp.ones(2, requires_grad=True)
    with tpx_inspect.capture(timing=False, live=True) as cap:
        kept = [x * 2]  # NOTE: alive at the read: the rest graph holds live nodes
        with cap.paused():
            kept.append(x.exp())  # not recorded by the capture
    (rest,) = cap.graphs
    assert [n.title for n in rest.nodes] == ["leaf", "mul"]


def test_a_nonfinite_step_inside_a_pause_is_not_seen() -> None:
    x = tp.ones(2, requires_grad=True)
    with tpx_inspect.capture("nonfinite", timing=False) as cap:
        with cap.paused():
            (x * float("nan")).sum().backward()
        (x * 2).sum().backward()
        (x * float("inf")).sum().backward()
    assert cap.trace.runs[0].steps == 2
    assert [g.step for g in cap.trace.graphs] == [1]
