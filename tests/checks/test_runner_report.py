"""Drivers (function, target, script, saved trace), the report (JSON, rich, exit codes), the
pytest helpers, and the wrong tp.Function of examples/custom_rule.py."""

from __future__ import annotations

import io
import json
import os
import textwrap

import numpy as np
import pytest
from rich.console import Console

import p10
import tpx as tp
from p10 import Op
from tests.helpers.load import load_example
from tpx_inspect.checks import (
    CATEGORIES,
    FUNCTION_CHECKS,
    CheckResult,
    Finding,
    Report,
    TargetError,
    load_target,
    run_all_checks,
    run_script_checks,
    run_trace_checks,
)
from tpx_inspect.pytest_helpers import assert_checks_pass, assert_gradients

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _wrong_sin():
    return tp.register_rule(Op.SIN, lambda ctx, g: (g * p10.sin(ctx.inputs[0]),), save=(0,))


def _f(x, w):
    return ((x @ w).sin() * x.sum()).sum()


def _inputs():
    rng = np.random.default_rng(2)
    return [
        tp.asarray(rng.standard_normal((2, 3)), requires_grad=True),
        tp.asarray(rng.standard_normal((3, 2)), requires_grad=True),
    ]


def test_run_all_checks_passes_on_correct_code_and_leaves_inputs_alone():
    inputs = _inputs()
    report = run_all_checks(_f, inputs)
    assert report.passed and report.exit_code == 0
    assert [r.check for r in report.results] == list(FUNCTION_CHECKS)
    assert all(x.grad is None for x in inputs)


def test_run_all_checks_fails_on_a_wrong_rule_with_the_right_categories():
    with _wrong_sin():
        report = run_all_checks(_f, _inputs())
    assert report.exit_code == 1
    failing = {r.check for r in report.results if not r.passed}
    assert failing == {"gradcheck", "local"}
    first = report.result("local").findings[0]
    assert first.op == "sin" and first.category in CATEGORIES


def test_progress_is_called_once_per_check():
    seen = []
    run_all_checks(_f, _inputs(), progress=lambda name, k, n: seen.append((name, k, n)))
    assert seen == [(name, k, len(FUNCTION_CHECKS)) for k, name in enumerate(FUNCTION_CHECKS)]


def test_unknown_check_names_are_rejected():
    with pytest.raises(ValueError, match="unknown check"):
        run_all_checks(_f, _inputs(), checks=["locla"])


def test_report_json_is_deterministic_and_complete():
    with _wrong_sin():
        report = run_all_checks(_f, _inputs(), checks=["local", "order"])
    text = report.to_json()
    assert text == report.to_json()
    data = json.loads(text)
    assert data["status"] == "fail" and data["failed"] is True and data["exit_code"] == 1
    (finding,) = data["checks"][0]["findings"]
    assert finding["op"] == "sin" and finding["category"] == "rule"
    assert isinstance(finding["details"]["numerical"], float)


def test_report_renders_summary_and_findings():
    report = Report((CheckResult("order", 3), CheckResult("local", 2, (Finding("rule", "bad"),))))
    console = Console(file=io.StringIO(), width=120)
    report.render(console)
    out = console.file.getvalue()
    assert "PASS" in out and "FAIL" in out and "first failure" in out and "bad" in out


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_load_target_from_a_file_with_a_generator_companion(tmp_path):
    _write(
        tmp_path,
        "model.py",
        """
        import tpx as tp

        def loss(x, w):
            return (x @ w).tanh().sum()

        def loss_inputs(generator):
            return tp.asarray(generator.randn((2, 3))), tp.asarray(generator.randn((3, 1)))
    """,
    )
    fn, inputs = load_target(f"{tmp_path}/model.py::loss", seed=4)
    assert fn.__name__ == "loss" and all(x.requires_grad for x in inputs)
    again = load_target(f"{tmp_path}/model.py::loss", seed=4)[1]
    assert np.array_equal(inputs[0].numpy(), again[0].numpy())
    assert run_all_checks(fn, inputs).passed


def test_load_target_from_a_module_with_a_plain_companion(tmp_path, monkeypatch):
    _write(
        tmp_path,
        "pkg_mod_target.py",
        """
        import tpx as tp

        def f(x):
            return x.sin().sum()

        def f_inputs():
            return tp.asarray([0.1, 0.2], requires_grad=True)
    """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    fn, inputs = load_target("pkg_mod_target:f")
    assert fn.__name__ == "f"
    assert len(inputs) == 1 and inputs[0].requires_grad


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("nonsense", "bad target"),
        ("no/such/file.py::f", "not found"),
        ("no_such_module_xyz:f", "cannot import"),
        ("{tmp}/m.py::missing", "has no function"),
        ("{tmp}/m.py::g", "define g_inputs"),
    ],
)
def test_load_target_errors_say_what_to_write(tmp_path, spec, match):
    _write(tmp_path, "m.py", "def g(x):\n    return x\n")
    with pytest.raises(TargetError, match=match):
        load_target(spec.format(tmp=tmp_path))


def test_run_script_checks_on_a_script(tmp_path):
    script = _write(
        tmp_path,
        "train.py",
        """
        import sys
        import tpx as tp
        x = tp.asarray([0.3, 0.8], requires_grad=True)
        for step in range(int(sys.argv[1])):
            (x.sin() * x).sum().backward()
    """,
    )
    report = run_script_checks(str(script), ["2"])
    assert report.passed and report.result("order").checked == 8
    with _wrong_sin():
        bad = run_script_checks(str(script), ["1"])
    assert bad.first_failure.op == "sin"


def test_a_failing_script_is_reported(tmp_path):
    script = _write(tmp_path, "boom.py", "raise RuntimeError('boom')\n")
    report = run_script_checks(str(script))
    assert report.exit_code == 1 and report.results[0].check == "script"


def test_offline_checks_from_a_saved_trace_find_the_same_node(tmp_path):
    import tpx_inspect

    def run():
        with tpx_inspect.capture(values="all", timing=False) as cap:
            x = tp.asarray([0.3, 0.8, -0.4], requires_grad=True)
            with tp.scope("enc"):
                y = (x.sin() * x).exp()
            y.sum().backward()
        return cap.trace

    assert run_trace_checks(run()).passed
    with _wrong_sin():
        trace = run()
    path = str(tmp_path / "t.json")
    tpx_inspect.save(trace, path)
    report = run_trace_checks(path)
    f = report.first_failure
    assert (f.category, f.op, f.scope, f.details["graph"]) == ("rule", "sin", "enc", 0)


def test_pytest_helpers_raise_assertion_errors():
    x = tp.asarray([0.3, 0.8], dtype=tp.float64, requires_grad=True)
    assert_gradients(lambda t: t.sin(), [x], second_order=True)
    with _wrong_sin():
        with pytest.raises(AssertionError, match="with respect to input 0"):
            assert_gradients(lambda t: t.sin(), [x])
        with pytest.raises(AssertionError, match=r"\[rule\] SinBackward"):
            assert_checks_pass(lambda t: t.sin().sum(), [x])


def _example():
    path = os.path.join(ROOT, "examples", "custom_rule.py")
    if not os.path.exists(path):
        pytest.skip("examples/custom_rule.py not present")
    return load_example("custom_rule")


@pytest.mark.parametrize("wrong", [False, True])
def test_the_custom_rule_example(wrong):
    ex = _example()
    import tpx.nn.functional as F

    model, x, y = ex.make_problem(wrong=wrong)
    report = run_all_checks(lambda t: F.cross_entropy(model(t), y), [x])
    if not wrong:
        assert report.passed
        return
    failing = {r.check for r in report.results if not r.passed}
    assert failing == {"gradcheck", "local"}
    (f,) = report.result("local").findings
    assert f.op == "WrongSiLU" and "custom_rule.py" in f.source


def test_render_keeps_brackets_of_scopes_and_elements():
    f = Finding("rule", "worst element [2, 1]", node=3, op="mul", scope="encoder")
    report = Report((CheckResult("local", 1, (f,), notes=("MulBackward [skip] skipped",)),))
    console = Console(file=io.StringIO(), width=200)
    report.render(console)
    out = console.file.getvalue()
    assert "[encoder]" in out and "[2, 1]" in out and "[skip] skipped" in out


@pytest.mark.parametrize(("name", "passes"), [("loss", True), ("wrong_loss", False)])
def test_the_custom_rule_example_as_a_target(name, passes):
    path = os.path.join(ROOT, "examples", "custom_rule.py")
    fn, inputs = load_target(f"{path}::{name}")
    report = run_all_checks(fn, inputs, checks=["local", "order"])
    assert report.passed is passes
    if not passes:
        assert report.first_failure.op == "WrongSiLU"
