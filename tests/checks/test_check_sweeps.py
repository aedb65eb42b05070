"""Issue 15's two sweeps. False positives: the full check suite (gradcheck, local, accumulation,
kernel, order, nonfinite, tracing) on every rule-table case and every tpx.nn model in float64
and float32, and the graph checks on every example (``--quick``): 0 findings. Planted bugs: one
per finding category, each found, in that category, at the node that holds the bug.

Run with ``-s`` to see each sweep's size (graphs, nodes, findings)."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import p10
import tpx as tp
import tpx.nn as nn
from tests.helpers.load import load_example
from tests.helpers.rule_cases import CASES
from tpx import _engine, _observers
from tpx_inspect.checks import CATEGORIES, Report, run_all_checks, run_script_checks

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))


class Tally:
    """How much a sweep checked: graphs, nodes, findings (with where they are)."""

    def __init__(self) -> None:
        self.graphs = self.nodes = self.checked = 0
        self.findings: list[tuple[str, str, str, str]] = []

    def add(self, name: str, report: Report, nodes: int) -> None:
        self.graphs += 1
        self.nodes += nodes
        self.checked += sum(r.checked for r in report.results)
        self.findings += [(name, f.category, f.where, f.message[:200]) for f in report.failures]

    def done(self, what: str) -> None:
        print(f"\nfalse-positive sweep, {what}: {self.graphs} graphs, {self.nodes} nodes, "
              f"{self.checked} items checked, {len(self.findings)} findings")  # fmt: skip
        assert self.findings == []
        assert self.nodes > self.graphs and self.checked > self.nodes  # not a vacuous sweep


def _nodes(report: Report) -> int:
    """Nodes of the recorded graph: the order check counts every node that ran."""
    return report.result("order").checked


def _rule_inputs(case: Any, dtype: str) -> list:
    return [
        tp.asarray(x.astype(dtype), requires_grad=True) if x.dtype.kind == "f" else tp.asarray(x)
        for x in case.inputs()
    ]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_false_positive_sweep_over_the_rule_table(dtype):
    tally = Tally()
    for case in CASES:
        with np.errstate(all="ignore"):
            report = run_all_checks(case.fn, _rule_inputs(case, dtype))
        tally.add(case.id, report, _nodes(report))
    tally.done(f"rule table ({len(CASES)} cases, {dtype})")


def _fixed(shape: tuple[int, ...]) -> tp.Tensor:
    """A target that does not move with the input (finite differences move the input)."""
    return tp.asarray(np.cos(np.arange(int(np.prod(shape)))).reshape(shape))


def _classes(n: int, k: int) -> tp.Tensor:
    return tp.asarray(np.arange(n) % k)


# Every tpx.nn module: a constructor and an input shape; losses get their targets.
MODELS: dict[str, tuple[Callable[[], Any], tuple[int, ...]]] = {
    "Linear": (lambda: nn.Linear(6, 4), (5, 6)),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, padding=1), (2, 2, 5, 5)),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), (2, 2, 4, 4)),
    "AvgPool2d": (lambda: nn.AvgPool2d(2), (2, 2, 4, 4)),
    "Flatten": (lambda: nn.Flatten(), (2, 3, 4)),
    "Identity": (lambda: nn.Identity(), (3, 4)),
    "ReLU": (lambda: nn.ReLU(), (3, 4)),
    "GELU": (lambda: nn.GELU(), (3, 4)),
    "Tanh": (lambda: nn.Tanh(), (3, 4)),
    "Sigmoid": (lambda: nn.Sigmoid(), (3, 4)),
    "Softmax": (lambda: nn.Softmax(), (3, 4)),
    "LayerNorm": (lambda: nn.LayerNorm(6), (4, 6)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(6), (5, 6)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), (2, 3, 4, 4)),
    "Dropout": (lambda: nn.Dropout(0.3), (4, 6)),
    "Embedding": (lambda: _EmbeddingOf(nn.Embedding(7, 4)), (5, 3)),
    "MultiheadSelfAttention": (lambda: nn.MultiheadSelfAttention(8, 2, causal=True), (2, 5, 8)),
    "TransformerBlock": (lambda: nn.TransformerBlock(8, 2, causal=True), (2, 5, 8)),
    "Sequential": (lambda: nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)), (4, 6)),
    "ModuleList": (lambda: _Chain(nn.ModuleList([nn.Linear(6, 6), nn.Tanh()])), (4, 6)),
    "ModuleDict": (lambda: _Chain(nn.ModuleDict({"a": nn.Linear(6, 5)})), (4, 6)),
    "MSELoss": (lambda: _LossOf(nn.MSELoss(), lambda y: _fixed(y.shape)), (4, 3)),
    "CrossEntropyLoss": (lambda: _LossOf(nn.CrossEntropyLoss(), lambda y: _classes(4, 3)), (4, 3)),
    "NLLLoss": (lambda: _LossOf(nn.NLLLoss(), lambda y: _classes(4, 3), log=True), (4, 3)),
    "BCEWithLogitsLoss": (
        lambda: _LossOf(nn.BCEWithLogitsLoss(), lambda y: (_fixed(y.shape) > 0) * 1.0),
        (4, 3),
    ),
}
NOT_MODELS = {"Module", "_BatchNorm"}  # the base classes


class _Chain(nn.Module):
    """Runs the modules of a ModuleList/ModuleDict in order."""

    def __init__(self, modules: Any) -> None:
        super().__init__()
        self.inner = modules

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        items = self.inner.values() if isinstance(self.inner, nn.ModuleDict) else self.inner
        for m in items:
            x = m(x)
        return x


class _LossOf(nn.Module):
    def __init__(self, loss: Any, target: Callable, log: bool = False) -> None:
        super().__init__()
        self.loss, self.target, self.log = loss, target, log

    def forward(self, y: tp.Tensor) -> tp.Tensor:
        inp = tp.log_softmax(y, axis=-1) if self.log else y
        return self.loss(inp, self.target(y))


class _EmbeddingOf(nn.Module):
    """An embedding looked up by fixed ids, scaled by the (differentiable) input."""

    def __init__(self, emb: Any) -> None:
        super().__init__()
        self.emb = emb

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return self.emb(tp.asarray(np.arange(15).reshape(5, 3) % 7)) * x.sum()


def _nn_classes() -> set[str]:
    seen, stack = set(), [nn.Module]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub.__module__.startswith("tpx.nn") and sub.__name__ not in seen:
                seen.add(sub.__name__)
                stack.append(sub)
    return seen | {"Module"}


def test_every_nn_model_is_in_the_sweep():
    missing = _nn_classes() - set(MODELS) - NOT_MODELS
    assert not missing, f"add these tpx.nn modules to MODELS in {__file__}: {sorted(missing)}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_false_positive_sweep_over_every_nn_model(dtype):
    tally = Tally()
    for name, (make, shape) in MODELS.items():
        p10.manual_seed(0)
        model = make()
        model = model.double() if dtype == "float64" else model
        x = tp.asarray(np.random.default_rng(1).standard_normal(shape).astype(dtype),
                       requires_grad=True)  # fmt: skip

        def loss(x, model=model):
            y = model(x)
            weights = np.linspace(-1.0, 1.0, y.numel()).reshape(y.shape).astype(dtype)
            return (y * tp.asarray(weights)).sum()

        report = run_all_checks(loss, [x])
        tally.add(name, report, _nodes(report))
    tally.done(f"tpx.nn ({len(MODELS)} models, {dtype})")


# NOTE: train_on_dask's --quick still makes 256 MB of data on 2 x 512 MB workers; the checks
# keep every recorded value, so the sweep runs it on a 4 MB dataset instead (same code path).
EXAMPLE_ARGS = {"train_on_dask": ["--data-gb", "0.004", "--chunk-mb", "1", "--steps", "1"]}


def test_false_positive_sweep_over_every_example():
    tally = Tally()
    for name in EXAMPLES:
        args = EXAMPLE_ARGS.get(name, ["--quick"])
        with contextlib.redirect_stdout(io.StringIO()):
            report = run_script_checks(os.path.join(ROOT, "examples", f"{name}.py"), args,
                                       max_backwards=1)  # fmt: skip
        tally.add(name, report, _nodes(report))
    tally.done(f"examples ({len(EXAMPLES)} scripts, --quick or small, first backward)")


# -- planted bugs: one per category ------------------------------------------------------------
def _x(values=(0.3, -0.8, 1.4), dtype="float64") -> tp.Tensor:
    return tp.asarray(np.asarray(values, dtype), requires_grad=True)


def _bug_gradcheck():
    example = load_example("custom_rule")
    wrong = example.silu_function(wrong=True)
    return run_all_checks(lambda x: wrong.apply(x).sum(), [_x()]), None


def _bug_rule():
    handle = tp.register_rule(p10.Op.TANH, lambda ctx, g: (g * p10.tanh(ctx.inputs[0]),), save=(0,))
    try:
        return run_all_checks(lambda x: (x.tanh() * x).sum(), [_x()]), "TanhBackward"
    finally:
        handle.remove()


def _overwrite(grads, node, g, source):
    """The planted engine bug: a later contribution replaces the earlier ones."""
    grads[node] = g
    if source is not None:
        _observers.emit("on_grad_accumulated", node, g, g, source)


def _bug_accumulation(monkeypatch):
    monkeypatch.setattr(_engine, "_accumulate", _overwrite)
    try:
        return run_all_checks(_fan_out, [_x()], checks=["accumulation"]), "TanhBackward"
    finally:
        monkeypatch.undo()


def _fan_out(x):
    h = x.tanh()  # two consumers: its gradient is a sum
    return (h * 2 + h.sin()).sum()


def _bug_kernel(backend_factory):
    name = backend_factory("planted_tanh", TANH=lambda a: np.tanh(a) * np.float32(1.01))
    x = _x(dtype="float32").detach().to(backend=name).requires_grad_()
    return run_all_checks(lambda t: (t.tanh() * t).sum(), [x], checks=["kernel"]), "TanhBackward"


def _bug_tracing():
    def f(x):
        scale = 1.0 if tp.is_grad_enabled() else 1.001
        return (x.exp() * scale).sum()

    return run_all_checks(f, [_x()], checks=["tracing"]), "MulBackward"


def _bug_order(monkeypatch):
    reachable = _engine.reachable

    def bad(roots):
        order = reachable(roots)
        cos = order.pop([n.name for n in order].index("CosBackward"))
        order.insert([n.name for n in order].index("AddBackward", 2) + 1, cos)
        return order

    monkeypatch.setattr(_engine, "reachable", bad)
    try:
        return run_all_checks(_diamond, [_x()], checks=["order"]), "AddBackward"
    finally:
        monkeypatch.undo()


def _diamond(a):
    b = a + a
    return (b.sin() + b.cos()).sum()


def _bug_nonfinite_forward():
    with np.errstate(all="ignore"):
        return run_all_checks(lambda x: (x - 1.0).log().exp().sum(), [_x()],
                              checks=["nonfinite"]), "LogBackward"  # fmt: skip


def _bug_nonfinite_backward():
    def f(x):
        return tp.where(x > 0, x.sqrt(), tp.zeros_like(x)).sum()  # sqrt at 0

    with np.errstate(all="ignore"):
        return run_all_checks(f, [_x((0.0, 4.0))], checks=["nonfinite"]), "SqrtBackward"


def _bug_replay(monkeypatch):
    from tests.checks.test_replay_check import plant_wrong_lowering

    plant_wrong_lowering(monkeypatch)
    try:
        # NOTE: the first value that differs is the returned sum
        return run_all_checks(lambda x: (x * x).sin().sum(), [_x()], checks=["replay"]), (
            "SumBackward"
        )
    finally:
        monkeypatch.undo()


PLANTED = {
    "gradcheck": ("WrongSiLU's backward drops a term (examples/custom_rule.py)", _bug_gradcheck),
    "rule": ("tanh's rule returns g * tanh(x)", _bug_rule),
    "accumulation": ("the engine overwrites a gradient instead of adding", _bug_accumulation),
    "kernel": ("a backend's tanh kernel is 1% off", _bug_kernel),
    "tracing": ("a value depends on grad mode", _bug_tracing),
    "order": ("the engine runs b = a + a before its consumer cos", _bug_order),
    "nonfinite-forward": ("log of a negative number", _bug_nonfinite_forward),
    "nonfinite-backward": ("sqrt's rule at 0 behind a where", _bug_nonfinite_backward),
    "replay": ("the plan's lowering runs a multiply as an add", _bug_replay),
}


def test_one_planted_bug_per_category():
    assert set(PLANTED) == set(CATEGORIES)


@pytest.mark.parametrize("category", list(PLANTED))
def test_planted_bug_is_found_and_attributed(category, request):
    what, plant = PLANTED[category]
    fixtures = [request.getfixturevalue(n) for n in plant.__code__.co_varnames[
        : plant.__code__.co_argcount]]  # fmt: skip
    report, node = plant(*fixtures)
    found = [f for f in report.failures if f.category == category]
    assert found, f"{what}: not found ({report.headline()})"
    first = found[0]
    if node is None:  # a whole-function check: attributed to the function's source line
        assert first.source and "test_check_sweeps.py" in first.source
        names = {f.name for f in report.failures if f.category == "rule"}
        assert names == {"WrongSiLUBackward"}  # and the local check names the node
    else:
        assert first.name == node, f"{what}: reported at {first.where}"
    print(f"\nplanted bug | {what} | {category} | {first.where}")
