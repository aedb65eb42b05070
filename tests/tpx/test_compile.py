"""tpx.compile: every rule-table case and training steps replayed bit for bit against eager,
plus the guards and graph breaks that make a function run eagerly (with one warning)."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest

import tpx as tp
import tpx.nn as nn
import tpx.optim as optim
from tests.helpers.rule_cases import CASES, Case


def _arrays(out: Any) -> list[np.ndarray]:
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in _arrays(o)]
    return [] if out is None else [np.array(out.numpy())]


def _assert_same(a: Any, b: Any) -> None:
    xs, ys = _arrays(a), _arrays(b)
    assert len(xs) == len(ys)
    for x, y in zip(xs, ys):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes(), "replay differs from eager (bitwise)"


def _case_step(c: Case) -> Any:
    def step(weights: tp.Tensor, *xs: tp.Tensor) -> Any:
        out = c.fn(*xs)
        (out * weights).sum().backward()
        return out.detach(), [x.grad for x in xs]

    return step


def _case_inputs(c: Case, shift: float, dtype: Any) -> list[tp.Tensor]:
    xs = []
    for a in c.inputs():
        if a.dtype.kind == "f":
            xs.append(tp.asarray((a + shift).astype(dtype), requires_grad=True))
        else:
            xs.append(tp.asarray(a))
    with tp.no_grad():
        out = c.fn(*xs)
    weights = tp.asarray(np.linspace(-1.0, 1.0, out.size).reshape(out.shape), dtype=out.dtype)
    return [weights, *xs]


ALLOWED_BREAKS = ("a tensor created from Python data", "a data-dependent read")


def _replay_case(c: Case, dtype: Any) -> bool:
    """Eager and compiled agree bitwise on three calls; True when the last two replayed, False
    when the case broke the graph (one warning naming an allowed reason) and ran eagerly."""
    step = _case_step(c)
    compiled = tp.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for shift in (0.0, 0.0, 1e-3):
            eager = step(*_case_inputs(c, shift, dtype))
            replayed = compiled(*_case_inputs(c, shift, dtype))
            _assert_same(eager, replayed)
    breaks = [str(m.message) for m in caught if m.category is tp.CompileWarning]
    assert compiled.stats.records == 1
    if breaks:  # a constant made from Python data inside the case, or a boolean mask
        assert len(breaks) == 1 and compiled.stats.eager_calls == 2
        assert any(reason in breaks[0] for reason in ALLOWED_BREAKS), breaks[0]
        return False
    assert compiled.stats.replays == 2
    return True


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rule_case_replays_bitwise(c: Case, dtype: Any) -> None:
    # NOTE: shift 0 records, 0 and a small shift replay (kinks lie 0.2 away from the inputs)
    _replay_case(c, dtype)


def test_most_rule_cases_replay_rather_than_break() -> None:
    replayed = [c.id for c in CASES if _replay_case(c, np.float64)]
    assert len(replayed) >= 0.75 * len(CASES), (len(replayed), len(CASES))
    ops = {c.op for c in CASES if c.id in set(replayed)}
    assert len(ops) >= 0.9 * len({c.op for c in CASES})


# -- training steps ---------------------------------------------------------------------------
def _train(compiled: bool, make_opt: Any, steps: int = 4) -> tuple[list, list, Any]:
    tp.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = make_opt(model.parameters())
    sched = optim.StepLR(opt, step_size=2, gamma=0.5)

    def step(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        sched.step()
        return loss

    run = tp.compile(step) if compiled else step
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = tp.asarray(rng.normal(size=(4, 8)).astype(np.float32))
        y = tp.asarray(rng.integers(0, 3, 4))
        losses.append(run(x, y))
    return losses, list(model.parameters()), run


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
        lambda p: optim.Adam(p, lr=0.01),
        lambda p: optim.AdamW(p, lr=0.01),
    ],
    ids=["sgd", "adam", "adamw"],
)
def test_training_step_replays_bitwise(make_opt: Any) -> None:
    eager_losses, eager_params, _ = _train(False, make_opt)
    losses, params, run = _train(True, make_opt)
    _assert_same(eager_losses, losses)
    _assert_same(eager_params, params)
    _assert_same([p.grad for p in eager_params], [p.grad for p in params])
    # NOTE: the first step makes the optimizer's state (an island, not cached): the second
    # call records the plan with the step lowered into kernels, the others replay it
    assert run.stats.records == 2 and run.stats.replays == 2
    assert any(plan.optimizers for plan in run.plans())


# -- guards and graph breaks ------------------------------------------------------------------
w = tp.ones(3, requires_grad=True)


def _item(x: tp.Tensor) -> Any:
    return x * (x.sum().item() + 1)


def _bool(x: tp.Tensor) -> Any:
    return x * 2 if bool((x > 0).all()) else x


def _tolist(x: tp.Tensor) -> Any:
    return x * len(x.tolist())


def _python_data(x: tp.Tensor) -> Any:
    return x * tp.asarray([1.0, 2.0, 3.0])


def _random(x: tp.Tensor) -> Any:
    return x * tp.rand(3)


def _hook(x: tp.Tensor) -> Any:
    y = w * x
    y.register_hook(lambda g: g * 2)
    y.sum().backward()
    return w.grad


def _create_graph(x: tp.Tensor) -> Any:
    (g,) = tp.grad((w * w * x).sum(), w, create_graph=True)
    return g.detach()


def _returns_graph(x: tp.Tensor) -> Any:
    return w * x


BREAKS = {
    "data-dependent read": _item,
    "data-dependent read ": _bool,
    "data-dependent read  ": _tolist,
    "created from Python data": _python_data,
    "random numbers": _random,
    "hook": _hook,
    "create_graph": _create_graph,
    "requires grad and runs no backward": _returns_graph,
}


@pytest.mark.parametrize("reason", list(BREAKS), ids=lambda r: r.strip().replace(" ", "-"))
def test_graph_break_runs_eagerly_with_one_warning(reason: str) -> None:
    fn = BREAKS[reason]
    compiled = tp.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            w.grad = None
            x = tp.asarray([1.0, 2.0, 3.0])
            tp.manual_seed(0)
            got = compiled(x)
            w.grad = None
            tp.manual_seed(0)
            _assert_same(fn(tp.asarray([1.0, 2.0, 3.0])), got)
    messages = [str(m.message) for m in caught if m.category is tp.CompileWarning]
    assert len(messages) == 1, messages
    assert reason.strip() in messages[0] and "test_compile.py:" in messages[0]
    assert compiled.stats.replays == 0 and compiled.stats.eager_calls == 2


def test_observer_and_anomaly_mode_run_eagerly() -> None:
    compiled = tp.compile(lambda x: x * 2)

    class Seen:
        def on_node_recorded(self, node: Any, out: Any) -> None:
            pass

    with pytest.warns(tp.CompileWarning, match="observer"), tp.add_observer(Seen()):
        compiled(tp.ones(2))
    with pytest.warns(tp.CompileWarning, match="anomaly"), tp.detect_anomaly():
        compiled(tp.ones(2))
    assert compiled.stats.eager_calls == 2 and compiled.stats.records == 0


def test_new_signature_records_a_new_plan_and_the_cache_is_bounded() -> None:
    compiled = tp.compile(lambda x: (x * x).sum(), cache_size=2)
    for n in (1, 2, 3, 1, 3):
        assert compiled(tp.ones(n)).item() == n
    assert compiled.stats.records == 4 and compiled.stats.evictions == 2
    assert compiled.stats.replays == 1
    with tp.no_grad():  # grad mode is part of the signature
        compiled(tp.ones(3))
    assert compiled.stats.records == 5


def test_plan_frees_buffers_and_reports_peak_memory() -> None:
    x = tp.ones((64, 64), requires_grad=True)

    @tp.compile
    def chain(x: tp.Tensor) -> tp.Tensor:
        x.grad = None
        y = x
        for _ in range(20):
            y = (y * 0.5).tanh()
        y.sum().backward()
        return x.grad

    _assert_same(chain(x), chain(x))
    (d,) = chain.describe()
    assert d["peak_bytes"] <= d["eager_peak_bytes"]
    assert {k["phase"] for k in d["kernels"]} >= {"forward", "backward"}
    assert all(k["node"] for k in d["kernels"] if k["phase"] in ("forward", "backward"))


def test_hand_written_sgd_inside_the_step_replays_bitwise() -> None:
    # `p -= lr * p.grad` under no_grad, recorded out of place and written back, replays as
    # the backend's in-place kernel: the same values
    def run(compiled: bool) -> list[np.ndarray]:
        rng = np.random.default_rng(0)
        params = [tp.asarray(rng.normal(size=s), requires_grad=True) for s in ((5, 4), (4,))]
        x = tp.asarray(rng.normal(size=(3, 5)))

        def step() -> tp.Tensor:
            loss = ((x @ params[0] + params[1]).tanh() ** 2).mean()
            loss.backward()
            with tp.no_grad():
                for p in params:
                    p -= 0.1 * p.grad
                    p.grad = None
            return loss

        fn = tp.compile(step) if compiled else step
        losses = [fn() for _ in range(4)]
        if compiled:
            assert fn.stats.replays >= 2
            kinds = {(s.kind, s.op) for s in fn.plans()[-1].steps}
            assert ("inplace", "sub") in kinds and ("setitem", "setitem") not in kinds
        return _arrays(losses) + _arrays(params)

    for a, b in zip(run(False), run(True)):
        assert a.tobytes() == b.tobytes()


def test_large_dying_buffers_are_reused_in_place_with_the_same_bits() -> None:
    rng = np.random.default_rng(3)
    w = tp.asarray(rng.normal(size=(160, 160)).astype(np.float32), requires_grad=True)
    c = tp.asarray(rng.normal(size=(160, 160)).astype(np.float32))

    def step(x: tp.Tensor) -> Any:
        w.grad = None
        y = ((x @ w + c) * 0.5 - c).tanh()
        (y * c).sum().backward()
        return y.detach(), w.grad

    compiled = tp.compile(step)
    for k in range(3):
        x = tp.asarray(rng.normal(size=(160, 160)).astype(np.float32) + k)
        _assert_same(step(x), compiled(x))
    names = [s.kernel.__name__ for s in compiled.plans()[-1].steps]
    assert "in_place" in names


def test_a_value_read_to_python_and_used_for_a_decision_is_a_graph_break() -> None:
    # NOTE: item() then a tensor of the same value would look like a copy; control flow on it
    # must not be baked into the plan
    def fn(x: tp.Tensor) -> Any:
        s = x.sum().item()
        return x * (s if s > 0 else 0.0)

    compiled = tp.compile(fn)
    with pytest.warns(tp.CompileWarning, match="data-dependent read"):
        compiled(tp.asarray([1.0, 2.0]))
    _assert_same(compiled(tp.asarray([-1.0, -2.0])), fn(tp.asarray([-1.0, -2.0])))


def test_a_constant_that_leaves_the_plan_is_fresh_at_every_call() -> None:
    # the gradient of x with respect to itself is the backward root's ones, a constant
    compiled = tp.compile(lambda x: tp.grad(x, x)[0])
    for _ in range(3):
        g = compiled(tp.ones((), requires_grad=True))
        assert g.item() == 1.0
        with tp.no_grad():
            g += 5.0  # the caller owns what it got back
    assert compiled.stats.replays == 2


def test_dead_steps_are_dropped_and_constant_steps_folded() -> None:
    # the unused exp and the loss value are dead; the backward root's ones / 4 is folded
    def step(x: tp.Tensor) -> tp.Tensor:
        x.grad = None
        _unused = (x * 3.0).exp()
        ((x * x).sum() / 4.0).backward()
        return x.grad

    compiled = tp.compile(step)
    for k in range(3):
        x = tp.asarray(np.arange(4.0) + k, requires_grad=True)
        y = tp.asarray(np.arange(4.0) + k, requires_grad=True)
        _assert_same(step(x), compiled(y))
    (d,) = compiled.describe()
    assert d["removed"]["dead"] >= 2 and d["removed"]["folded"] >= 1
    assert "exp" not in [k["op"] for k in d["kernels"]]


def test_a_captured_tensor_changed_between_calls_is_read_anew() -> None:
    # a tensor made outside the function is captured by reference: never folded into a constant
    c = tp.asarray([1.0, 2.0, 3.0])
    compiled = tp.compile(lambda x: x * (c * 2.0))
    x = tp.ones(3)
    first = compiled(x).tolist()
    with tp.no_grad():
        c += 1.0
    assert compiled(x).tolist() == [4.0, 6.0, 8.0] != first
    assert compiled.stats.replays == 1


def test_an_interceptor_records_under_an_observer_and_replays() -> None:
    class Count:
        n = 0

        def on_node_recorded(self, node: Any, output: Any) -> None:
            self.n += 1
            _ = output.detach().numpy()  # as a capture keeps values: not a read inside fn

    w = tp.asarray([0.5, -1.0], requires_grad=True)

    def step(x: tp.Tensor) -> tp.Tensor:
        w.grad = None
        (w * x).tanh().sum().backward()
        return w.grad

    eager = Count()
    with tp.add_observer(eager):
        expected = step(tp.asarray([2.0, 3.0]))
    compiled, count = tp.compile(step), Count()
    with (
        tp.add_observer(count),
        tp.CompiledFunction.intercept(
            lambda call: call.record() if call.plan is None else call.replay()
        ),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error", tp.CompileWarning)
        got = [compiled(tp.asarray([2.0, 3.0])) for _ in range(3)]
    assert count.n == eager.n > 0  # the recording call was observed; replays make no nodes
    assert compiled.stats.records == 1 and compiled.stats.replays == 2
    _assert_same(expected, got[2])
    assert "tanh" in [k.op for k in compiled.plans()[0].steps]


def test_generated_code_writes_a_kernel_read_once_inline_with_the_same_bits() -> None:
    # NOTE: matmul's backward transposes its operands (permute, read once by the next matmul):
    # the generated code nests the calls; an operand dying at the inlined step is freed only
    # after the step that reads it, and a dying large buffer is still reused in place
    rng = np.random.default_rng(4)
    w0 = rng.normal(size=(128, 160)).astype(np.float32)
    v0 = rng.normal(size=(160, 96)).astype(np.float32)

    def make() -> Any:
        w, v = tp.asarray(w0, requires_grad=True), tp.asarray(v0, requires_grad=True)

        def step(x: tp.Tensor) -> Any:
            w.grad = v.grad = None
            h = (x @ w).relu()
            loss = ((h @ v).tanh() * 0.25).sum(axis=-1, keepdims=True).exp().sum()
            loss.backward()
            with tp.no_grad():
                w.sub_(w.grad * 0.01)
            return loss.detach(), w.grad, v.grad, w.detach()

        return step

    eager, compiled = make(), tp.compile(make())
    for _ in range(4):  # NOTE: .grad None at the first call, set later: recorded twice
        x = tp.asarray(rng.normal(size=(64, 128)).astype(np.float32))
        _assert_same(eager(x), compiled(x))
    assert compiled.stats.replays == 2
    source = compiled.plans()[-1].segments[0].run.source
    assert re.search(r"k\d+\([^()\n]*k\d+\(", source), source  # a nested kernel call
    assert "**" not in source  # parameters passed as keywords


def test_python_floats_key_plans_by_their_bits() -> None:
    # NOTE: -0.0 == 0.0 and NaN != NaN: a key by value would replay -0.0's plan for 0.0
    # (a zero of the wrong sign) and record NaN's plan again at every call
    f = tp.compile(lambda x, s: x * s)
    x = tp.asarray([1.0, -2.0])
    for s in (-0.0, 0.0, -0.0, float("nan"), float("nan")):
        _assert_same(x * s, f(x, s))
    assert f.stats.records == 3 and f.stats.replays == 2
