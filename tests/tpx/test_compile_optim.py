"""tpx.compile lowers SGD/Adam/AdamW steps into plan kernels: every option replayed bit for bit
against the eager optimizer (parameters, gradients and ``state_dict()``), with schedulers,
user edits of the learning rate, ``zero_grad`` both ways, a param group added, a state dict
loaded, and each reason a step stays an eager island (one warning naming it)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tpx as tp
import tpx.nn as nn
import tpx.optim as optim
from tpx import _plan_optim

OPTIONS: dict[str, Callable[[Any], optim.Optimizer]] = {
    "sgd": lambda p: optim.SGD(p, lr=0.1),
    "sgd-momentum": lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
    "sgd-dampening-wd": lambda p: optim.SGD(
        p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01
    ),
    "sgd-nesterov-maximize": lambda p: optim.SGD(
        p, lr=0.05, momentum=0.9, nesterov=True, maximize=True
    ),
    "sgd-wd": lambda p: optim.SGD(p, lr=0.1, weight_decay=0.1),
    "adam": lambda p: optim.Adam(p, lr=0.01),
    "adam-wd-amsgrad": lambda p: optim.Adam(p, lr=0.01, weight_decay=0.1, amsgrad=True),
    "adam-maximize": lambda p: optim.Adam(p, lr=0.01, betas=(0.8, 0.99), maximize=True),
    "adamw": lambda p: optim.AdamW(p, lr=0.01),
    "adamw-amsgrad-maximize": lambda p: optim.AdamW(p, lr=0.01, amsgrad=True, maximize=True),
    "adamw-no-wd": lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.0),
}


def _model() -> nn.Module:
    tp.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def _batches(n: int) -> list[tuple[tp.Tensor, tp.Tensor]]:
    rng = np.random.default_rng(1)
    return [
        (tp.asarray(rng.normal(size=(5, 6)).astype(np.float32)), tp.asarray(rng.integers(0, 3, 5)))
        for _ in range(n)
    ]


def _step_fn(model: nn.Module, opt: Any, sched: Any, set_to_none: bool) -> Callable:
    def step(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        opt.zero_grad(set_to_none=set_to_none)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        return loss.detach()

    return step


def _flat_state(value: Any, name: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [e for k in sorted(value, key=str) for e in _flat_state(value[k], f"{name}/{k}")]
    if isinstance(value, (list, tuple)):
        return [e for k, v in enumerate(value) for e in _flat_state(v, f"{name}/{k}")]
    if isinstance(value, np.ndarray):
        return [(name, (value.dtype.str, value.shape, value.tobytes()))]
    return [(name, (type(value).__name__, repr(value)))]


def assert_same_training(eager: tuple, compiled: tuple) -> None:
    """Losses, parameters, gradients and the optimizer's state dict equal bit for bit."""
    (l1, m1, o1), (l2, m2, o2) = eager, compiled
    assert [a.numpy().tobytes() for a in l1] == [a.numpy().tobytes() for a in l2], "losses"
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert p.numpy().tobytes() == q.numpy().tobytes(), "parameters differ (bitwise)"
        assert (p.grad is None) == (q.grad is None)
        if p.grad is not None:
            assert p.grad.numpy().tobytes() == q.grad.numpy().tobytes(), "grads differ"
    assert _flat_state(o1.state_dict()) == _flat_state(o2.state_dict()), "optimizer state"


def _train(make: Callable, compiled: bool, steps: int = 6, set_to_none: bool = True,
           schedule: bool = True, edit: Callable | None = None) -> tuple:  # fmt: skip
    model = _model()
    opt = make(model.parameters())
    sched = optim.StepLR(opt, step_size=2, gamma=0.5) if schedule else None
    step = _step_fn(model, opt, sched, set_to_none)
    run = tp.compile(step) if compiled else step
    losses = []
    for k, (x, y) in enumerate(_batches(steps)):
        if edit is not None:
            edit(k, model, opt)
        losses.append(run(x, y))
    return (losses, model, opt), run


def _lowered(run: Any) -> bool:
    return any(p.optimizers for p in run.plans())


@pytest.mark.parametrize("set_to_none", [True, False], ids=["none", "zeros"])
@pytest.mark.parametrize("name", list(OPTIONS))
def test_lowered_step_replays_bitwise(name: str, set_to_none: bool) -> None:
    eager, _ = _train(OPTIONS[name], False, set_to_none=set_to_none)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tp.CompileWarning)
        compiled, run = _train(OPTIONS[name], True, set_to_none=set_to_none)
    assert_same_training(eager, compiled)
    assert _lowered(run), "the optimizer step was not lowered"
    assert run.stats.replays >= 4 and run.stats.eager_calls == 0
    plan = run.plans()[-1]
    steps = [s for s in plan.steps if s.origin and s.origin[0] == "optimizer"]
    assert steps and all("group 0 param" in s.origin[2] for s in steps)


def test_a_planted_wrong_bias_correction_fails_the_comparison(monkeypatch: Any) -> None:
    eager, _ = _train(OPTIONS["adam"], False)
    real = _plan_optim.Lowering.prologue

    def wrong(self: Any) -> Callable:
        fn = real(self)
        slots = [i for _, _, scalars, _ in self.params for n, i in scalars if n == "lr/(1-b1^t)"]

        def prologue(b: list) -> bool:
            ok = fn(b)
            for i in slots:  # NOTE: the planted bug: bias correction 1 - b1^(t+1)
                b[i] = b[i] * (1.0 - 0.9**2) / (1.0 - 0.9**3)
            return ok

        return prologue

    monkeypatch.setattr(_plan_optim.Lowering, "prologue", wrong)
    compiled, run = _train(OPTIONS["adam"], True)
    assert _lowered(run)
    with pytest.raises(AssertionError, match=r"losses|parameters differ"):
        assert_same_training(eager, compiled)


def test_learning_rate_edits_between_calls_are_honoured() -> None:
    def edit(k: int, model: Any, opt: Any) -> None:
        opt.param_groups[0]["lr"] = 0.02 * (k + 1)
        opt.param_groups[0]["betas"] = (0.9, 0.99 if k % 2 else 0.999)

    eager, _ = _train(OPTIONS["adamw"], False, schedule=False, edit=edit)
    compiled, run = _train(OPTIONS["adamw"], True, schedule=False, edit=edit)
    assert_same_training(eager, compiled)
    assert _lowered(run) and run.stats.replays >= 4


def test_a_param_group_added_invalidates_the_plan() -> None:
    extra = {}

    def edit(k: int, model: Any, opt: Any) -> None:
        if k == 3:
            tp.manual_seed(5)
            extra["w"] = w = tp.ones(3, requires_grad=True)
            w.grad = tp.full((3,), 0.5)
            opt.add_param_group({"params": [w], "lr": 0.3})

    eager, _ = _train(OPTIONS["sgd-momentum"], False, edit=edit)
    w_eager = extra["w"].numpy().tobytes()
    compiled, run = _train(OPTIONS["sgd-momentum"], True, edit=edit)
    assert_same_training(eager, compiled)
    assert extra["w"].numpy().tobytes() == w_eager
    assert run.stats.records >= 3  # NOTE: records again after the group was added


def test_switching_between_compiled_and_eager_and_loading_state() -> None:
    def run_all(compiled: bool) -> tuple:
        model = _model()
        opt = optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
        step = _step_fn(model, opt, None, True)
        fast = tp.compile(step) if compiled else step
        losses = []
        for k, (x, y) in enumerate(_batches(8)):
            if k == 5:
                saved = opt.state_dict()
                opt.load_state_dict(saved)  # NOTE: new state tensors, same keys and values
            losses.append((step if k in (3, 6) else fast)(x, y))
        return (losses, model, opt), fast

    eager, _ = run_all(False)
    compiled, fast = run_all(True)
    assert_same_training(eager, compiled)
    assert _lowered(fast) and fast.stats.replays >= 3


def test_the_first_step_that_makes_the_state_records_again_without_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", tp.CompileWarning)
        _, run = _train(OPTIONS["adam"], True, steps=3)
    assert run.stats.records == 2 and run.stats.replays == 1
    assert len(run.plans()) == 1 and _lowered(run)


# -- what stays an eager island (one warning naming the reason) -----------------------------------
class _LiteralSGD(optim.SGD):
    def _apply(self, p: Any, g: Any, group: dict, state: dict, s: dict) -> None:
        p.sub_(g * 0.1)  # NOTE: a number _advance did not give: it would be fixed in the plan


class _HostSGD(optim.SGD):
    def _apply(self, p: Any, g: Any, group: dict, state: dict, s: dict) -> None:
        p.sub_(g * tp.asarray(np.full(p.shape, s["lr"], dtype=np.float32)))


FALLBACKS: dict[str, tuple[Callable, str]] = {
    "not-lowered": (lambda p: optim.RMSprop(p, lr=0.01), "RMSprop is not lowered"),
    "int-hyper-parameter": (lambda p: optim.SGD(p, lr=1), "lr=1 is a int, not a Python float"),
    "number-not-from-advance": (lambda p: _LiteralSGD(p, lr=0.1), "_advance did not"),
    "tensor-from-host-data": (lambda p: _HostSGD(p, lr=0.1), "makes a tensor from host data"),
}


@pytest.mark.parametrize("reason", list(FALLBACKS))
def test_what_is_not_lowered_runs_as_an_island_with_one_warning(reason: str) -> None:
    make, message = FALLBACKS[reason]
    eager, _ = _train(make, False, schedule=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled, run = _train(make, True, schedule=False)
    assert_same_training(eager, compiled)
    texts = [str(m.message) for m in caught if m.category is tp.CompileWarning]
    assert len(texts) == 1 and message in texts[0] and "eager island" in texts[0], texts
    assert not _lowered(run) and run.stats.replays >= 4


def test_a_closure_keeps_the_step_an_island() -> None:
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    x, y = _batches(1)[0]

    def closure() -> Any:
        return None

    def step() -> None:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step(closure)

    run = tp.compile(step)
    with pytest.warns(tp.CompileWarning, match="SGD.step gets a closure"):
        for _ in range(3):
            run()
    assert not _lowered(run) and run.stats.replays == 2


def test_a_changed_option_falls_back_for_one_call_then_records_again() -> None:
    def edit(k: int, model: Any, opt: Any) -> None:
        if k == 3:
            opt.param_groups[0]["nesterov"] = True

    eager, _ = _train(OPTIONS["sgd-momentum"], False, schedule=False, edit=edit)
    compiled, run = _train(OPTIONS["sgd-momentum"], True, schedule=False, edit=edit)
    assert_same_training(eager, compiled)
    assert run.stats.records == 3 and _lowered(run)


def test_the_prologue_is_generated_code_over_the_live_optimizer() -> None:
    _, run = _train(OPTIONS["adamw"], True, steps=3)
    seg = next(s for s in run.plans()[0].segments if s.prologue is not None)
    source = seg.prologue.source
    assert "opt._plan_token() != token" in source and "advance(groups[0]" in source
    assert "n['lr/(1-b1^t)']" in source and "s['exp_avg_sq']._value._data" in source


@pytest.mark.slow
def test_the_tiny_transformer_example_lowers_adamw_and_matches_eager(monkeypatch: Any) -> None:
    from tests.helpers.load import load_example as load

    example = load("tiny_transformer")
    eager = example.train(steps=6)
    made: list[Any] = []
    real = tp.compile

    def spy(fn: Any = None, **kwargs: Any) -> Any:
        made.append(real(fn, **kwargs))
        return made[-1]

    monkeypatch.setattr(tp, "compile", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tp.CompileWarning)
        compiled = example.train(steps=6, compile=True)
    (run,) = made
    assert _lowered(run) and run.stats.replays >= 3
    for p, q in zip(eager["model"].parameters(), compiled["model"].parameters()):
        assert p.numpy().tobytes() == q.numpy().tobytes()


@pytest.mark.parametrize("zero_grad_at", ["start", "end"])
@pytest.mark.parametrize("name", ["sgd", "sgd-wd", "adamw"])
def test_a_large_gradient_read_last_by_the_step_is_not_overwritten(
    name: str, zero_grad_at: str
) -> None:
    # NOTE: a buffer that dies at an elementwise step is reused in place when it is large
    # (>= 64 kB): a gradient that leaves the plan (zero_grad at the start: .grad is set
    # after the call) is never reused; one set to None after the step (zero_grad at the end)
    # dies inside the plan and may be
    def run(compiled: bool) -> tuple:
        w = tp.asarray(np.linspace(-1, 1, 128 * 160).reshape(128, 160).astype(np.float32),
                       requires_grad=True)  # fmt: skip
        opt = OPTIONS[name]([w])

        def step(x: tp.Tensor) -> None:
            if zero_grad_at == "start":
                opt.zero_grad()
            (w * x).sum().backward()
            opt.step()
            if zero_grad_at == "end":
                opt.zero_grad()

        fn = tp.compile(step) if compiled else step
        for k in range(4):
            fn(tp.full((128, 160), 0.5 + k, dtype=tp.float32))
        grad = None if w.grad is None else w.grad.numpy().tobytes()
        return w.numpy().tobytes(), grad, fn

    weights, grad, _ = run(False)
    weights2, grad2, fn = run(True)
    assert _lowered(fn) and grad2 == grad and weights2 == weights


def test_zero_grad_to_none_runs_inside_the_plan_and_zeros_stay_an_island() -> None:
    for to_none, islands in ((True, 0), (False, 1)):
        _, run = _train(OPTIONS["adam"], True, set_to_none=to_none, schedule=False)
        plan = run.plans()[-1]
        names = [s.island[0].__name__ for s in plan.segments if s.island is not None]
        assert names.count("zero_grad") == islands, names
        assert plan.optimizers and (plan.param_guards != []) is to_none


def test_a_grad_set_outside_the_plan_is_checked_before_the_lowered_step() -> None:
    # NOTE: the step only: every .grad comes from outside; w2's is None when recorded
    def run(compiled: bool) -> tuple:
        w1, w2 = tp.ones(3, requires_grad=True), tp.ones(2, requires_grad=True)
        opt = optim.SGD([w1, w2], lr=0.5)
        fn = tp.compile(opt.step) if compiled else opt.step
        for k in range(4):
            w1.grad = tp.full((3,), 1.0 + k)
            if k >= 2:
                w2.grad = tp.full((2,), 2.0 + k)
            fn()
        return w1.numpy().tobytes(), w2.numpy().tobytes(), fn

    a1, a2, _ = run(False)
    b1, b2, fn = run(True)
    assert (a1, a2) == (b1, b2)
    assert fn.stats.records >= 2  # NOTE: w2's .grad set: the step ran eagerly, then recorded


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
        ("Adam", {"lr": 0.1, "weight_decay": 0.1, "amsgrad": True}),
        ("AdamW", {"lr": 0.1, "weight_decay": 0.1}),
    ],
)
def test_maximize_matches_torch(name: str, kwargs: dict) -> None:
    torch = pytest.importorskip("torch")
    start = np.array([0.5, -1.5, 2.0])
    w = tp.asarray(start.copy(), requires_grad=True)
    v = torch.tensor(start.copy(), requires_grad=True)
    mine = getattr(optim, name)([w], maximize=True, **kwargs)
    theirs = getattr(torch.optim, name)([v], maximize=True, **kwargs)
    for k in range(3):
        mine.zero_grad()
        theirs.zero_grad()
        (w * w * (k + 1.0)).sum().backward()
        (v * v * (k + 1.0)).sum().backward()
        mine.step()
        theirs.step()
    np.testing.assert_allclose(w.numpy(), v.detach().numpy(), rtol=1e-12, atol=1e-12)
