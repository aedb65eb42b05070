"""Kernel check against a second, test-only backend; tracing on vs off; first NaN/Inf."""

from __future__ import annotations

import numpy as np
import pytest

import tpx as tp
from tpx_inspect.checks import capture_call, kernel_check, nonfinite_check, tracing_check


def _on(backend, values):
    return tp.from_numpy(np.asarray(values, np.float32)).to(backend=backend).requires_grad_()


def _net(x, w):
    with tp.scope("layer"):
        return ((x @ w).tanh() * x.sum()).sin().sum()


def _inputs(backend):
    rng = np.random.default_rng(1)
    return [_on(backend, rng.standard_normal((2, 3))), _on(backend, rng.standard_normal((3, 3)))]


def test_a_correct_second_backend_passes(backend_factory):
    name = backend_factory("copy_of_numpy")
    result = kernel_check(capture_call(_net, _inputs(name)))
    assert result.passed and result.checked == 6 and result.skipped == 0


def test_wrong_forward_kernel_is_named_with_its_backend(backend_factory):
    name = backend_factory("bad_tanh", TANH=lambda x: np.tanh(x) * np.float32(1.01))
    result = kernel_check(capture_call(_net, _inputs(name)))
    (f,) = result.findings
    assert (f.category, f.op, f.scope, f.details["phase"]) == ("kernel", "tanh", "layer", "forward")
    assert "bad_tanh kernel of tanh" in f.message and f.details["backend"] == "bad_tanh"


def test_wrong_kernel_used_only_by_a_rule_is_named_at_that_rule(backend_factory):
    # cos runs only inside sin's rule: the forward agrees, sin's backward does not
    name = backend_factory("bad_cos", COS=lambda x: np.cos(x) + np.float32(0.5))
    result = kernel_check(capture_call(_net, _inputs(name)))
    (f,) = result.findings
    assert (f.op, f.details["phase"], f.details["kernel"]) == ("sin", "backward", "cos")
    assert "its cos kernel" in f.message


def test_nodes_on_the_spec_backend_are_skipped():
    result = kernel_check(capture_call(_net, _inputs("numpy")))
    assert result.checked == 0 and result.skipped == 6


def test_tracing_passes_on_ordinary_and_random_code():
    def f(x):
        noise = tp.randn(x.shape)  # the default generator is reseeded before each run
        return ((x + noise * 0.1).relu() @ x.T).sum()

    result, graph = tracing_check(f, [tp.ones((2, 3), requires_grad=True)])
    assert result.passed and result.checked >= 4 and len(graph.nodes) > 0


def test_tracing_names_the_node_whose_value_depends_on_grad_mode():
    def f(x):
        y = x.exp()
        scale = 1.0 if tp.is_grad_enabled() else 1.001
        with tp.scope("odd"):
            z = y * scale
        return z.sum()

    result, _ = tracing_check(f, [tp.asarray([1.0, 2.0], requires_grad=True)])
    (f,) = result.findings
    assert (f.category, f.op, f.scope) == ("tracing", "mul", "odd")


def test_nan_produced_in_the_forward_names_the_producer_not_the_passers_on():
    def f(x):
        with tp.scope("loss"):
            y = (x - 1.0).log()  # log of a negative number: NaN
        return (y * 2).exp().sum()

    with np.errstate(invalid="ignore"):
        graph = capture_call(f, [tp.asarray([0.5, 3.0], requires_grad=True)])
    result = nonfinite_check(graph)
    forward = [x for x in result.findings if x.category == "nonfinite-forward"]
    (f0,) = forward
    assert (f0.op, f0.scope, f0.details["role"]) == ("log", "loss", "producer")
    passed_on = [graph.node(i).name for i in f0.details["passed_on"]]
    assert passed_on == ["MulBackward", "ExpBackward", "SumBackward"]


def test_nan_produced_only_in_the_backward_names_its_rule():
    def f(x):
        safe = tp.where(x > 0, x.sqrt(), tp.zeros_like(x))  # the classic sqrt-at-0 trap
        return safe.sum()

    with np.errstate(invalid="ignore", divide="ignore"):
        graph = capture_call(f, [tp.asarray([0.0, 4.0], requires_grad=True)])
    result = nonfinite_check(graph)
    (f0,) = result.findings
    assert (f0.category, f0.op) == ("nonfinite-backward", "sqrt")
    assert [graph.node(i).name for i in f0.details["passed_on"]] == ["AccumulateGrad"]
    assert graph.replay_node(f0.node).output.tolist() == [0.0, 2.0]  # forward values are finite


@pytest.mark.parametrize("values", [[1.5, 2.5], [1.001, 3.0]])
def test_finite_code_has_no_nonfinite_findings(values):
    graph = capture_call(lambda x: x.log().sqrt().sum(), [tp.asarray(values, requires_grad=True)])
    assert nonfinite_check(graph).passed


def test_finite_contributions_that_overflow_when_summed_are_named():
    x = tp.asarray([1e-10], requires_grad=True)
    with np.errstate(over="ignore"):
        graph = capture_call(lambda t: (t * 2e38 + t * 2e38).sum(), [x])
    (f,) = nonfinite_check(graph).findings
    assert (f.category, f.name, f.details["role"]) == (
        "nonfinite-backward",
        "AccumulateGrad",
        "accumulation",
    )


def test_gradcheck_and_all_checks_run_on_a_second_backend(backend_factory):
    from tpx_inspect.checks import gradcheck, gradgradcheck, run_all_checks

    name = backend_factory("other_backend")
    x = tp.from_numpy(np.array([0.3, 0.5])).to(backend=name).requires_grad_()
    assert gradcheck(lambda t: t.sin() * t, [x]) and gradgradcheck(lambda t: t.sin() * t, [x])
    report = run_all_checks(lambda t: (t.sin() * t).sum(), [x])
    assert report.passed and report.result("kernel").checked == 3
