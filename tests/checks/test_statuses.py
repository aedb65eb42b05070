"""Issue 15: a check says PASS only when it checked something and nothing failed; SKIPPED and
PARTIAL carry their reasons; every surface (CLI, --json, server) shows the same status."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest
from click.testing import CliRunner

import p10
import tpx as tp
from tpx_inspect.checks import (
    CheckResult,
    Finding,
    Report,
    Skip,
    Status,
    capture_call,
    kernel_check,
    run_all_checks,
    run_graph_checks,
    tracing_check,
)
from tpx_inspect.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize(
    ("result", "status"),
    [
        (CheckResult("order", 3), Status.PASS),
        (CheckResult("order", 3, (Finding("order", "bad"),)), Status.FAIL),
        (CheckResult("order", 0, (Finding("order", "bad"),)), Status.FAIL),
        (CheckResult("kernel", 0, skipped=4, skips=(Skip("why"),)), Status.SKIPPED),
        (CheckResult("kernel", 0), Status.SKIPPED),
        (CheckResult("local", 2, skipped=1, skips=(Skip("why", 1),)), Status.PARTIAL),
        (CheckResult("local", 2, (Finding("rule", "x"),), 1, skips=(Skip("y", 1),)), Status.FAIL),
    ],
)
def test_status_of_one_result(result, status):
    assert result.status is status
    assert result.to_dict()["status"] == status.value
    assert result.summary().startswith(status.label)


def test_reasons_are_grouped_and_a_skip_never_reads_as_pass():
    skips = (Skip("no values", 1), Skip("custom op", 2), Skip("no values", 3))
    r = CheckResult("local", 5, skipped=3, skips=skips)
    assert r.summary() == "PARTIAL: 5 checked, 3 skipped (2: no values; 1: custom op)"
    data = r.to_dict()
    assert data["reasons"] == [
        {"reason": "no values", "count": 2, "nodes": [1, 3]},
        {"reason": "custom op", "count": 1, "nodes": [2]},
    ]
    assert "passed" not in data and "pass" not in r.summary().lower()


def test_report_status_and_strict_exit_codes():
    ok, skipped = CheckResult("order", 3), CheckResult("kernel", 0, skips=(Skip("spec"),))
    failed = CheckResult("local", 1, (Finding("rule", "bad"),))
    assert Report((ok,)).status is Status.PASS and Report((ok,), strict=True).exit_code == 0
    assert Report((skipped,)).status is Status.SKIPPED
    partial = Report((ok, skipped))
    assert partial.status is Status.PARTIAL and partial.exit_code == 0
    assert partial.exit_code_for(strict=True) == 1
    assert Report((ok, skipped, failed)).status is Status.FAIL
    assert Report((ok, failed)).exit_code == 1
    assert "kernel: spec" in partial.headline()


def _net(x, w):
    return ((x @ w).tanh() * x.sum()).sum()


def test_kernel_check_on_a_numpy_run_is_skipped_not_passed():
    x = tp.asarray([[0.5, -1.0]], dtype="float64", requires_grad=True)
    w = tp.asarray([[1.0], [2.0]], dtype="float64", requires_grad=True)
    r = kernel_check(capture_call(_net, [x, w]))
    assert r.status is Status.SKIPPED and r.checked == 0
    assert r.summary() == "SKIPPED: NumPy is the spec backend: nothing to compare"


def test_graph_without_backward_skips_order_and_accumulation():
    with tp.no_grad():
        pass
    from tpx_inspect.checks import record

    with record() as rec:
        _ = tp.asarray([0.5, 1.0], requires_grad=True).sin()
    report = run_graph_checks(rec.graph())
    assert report.result("order").status is Status.SKIPPED
    assert report.result("accumulation").status is Status.SKIPPED
    assert report.result("local").status is Status.PASS


def test_tracing_passes_on_in_place_updates_and_still_fails_on_a_planted_bug():
    def inplace(x):
        g = x * 2.0
        g += x.sin()
        g *= 0.5
        return (g * g).sum()

    x = tp.asarray([0.1, -0.4, 1.3], dtype="float64", requires_grad=True)
    result, _ = tracing_check(inplace, [x])
    assert result.status is Status.PASS, result.findings
    report = run_all_checks(inplace, [x])
    assert report.passed and report.result("tracing").status is Status.PASS

    def planted(x):
        y = x.exp()
        if tp.is_grad_enabled():
            y += 1e-12  # a value that depends on whether the graph is recorded
        return y.sum()

    result, _ = tracing_check(planted, [x])
    (finding,) = result.findings
    assert (
        result.status is Status.FAIL and finding.op == "add" and "test_statuses" in finding.source
    )


def test_assert_checks_pass_points_at_the_callers_line():
    from tpx_inspect.pytest_helpers import assert_checks_pass

    handle = tp.register_rule(p10.Op.SIN, lambda ctx, g: (g * p10.sin(ctx.inputs[0]),), save=(0,))
    x = tp.asarray([0.3, 1.2], dtype="float64", requires_grad=True)
    try:
        with pytest.raises(AssertionError) as info:
            line = sys._getframe().f_lineno + 1
            assert_checks_pass(tp.sin, [x])  # tp.sin records no frame of this file itself
    finally:
        handle.remove()
    assert f"test_statuses.py:{line} in test_assert_checks_pass" in str(info.value)
    assert "tpx_inspect" not in str(info.value).split("failed:")[1].replace(
        "tpx_inspect checks", ""
    )


def test_gradcheck_json_keeps_import_time_prints_off_stdout(tmp_path):
    target = tmp_path / "noisy.py"
    target.write_text(
        textwrap.dedent(
            """
            import tpx as tp
            print("hello from import time")

            def f(x):
                g = x * 2.0
                g += x.sin()
                return (g * g).sum()

            def f_inputs(gen):
                print("hello from the inputs")
                return (tp.asarray(gen.randn((3,), dtype="float64"), requires_grad=True),)
            """
        )
    )
    result = CliRunner().invoke(cli, ["gradcheck", f"{target}::f", "--json"])
    data = json.loads(result.stdout)  # the report alone
    assert "hello from import time" in result.stderr
    assert data["status"] == "partial" and result.exit_code == 0
    statuses = {c["check"]: c["status"] for c in data["checks"]}
    assert statuses["tracing"] == "pass" and statuses["kernel"] == "skipped"
    strict = CliRunner().invoke(cli, ["gradcheck", f"{target}::f", "--json", "--strict"])
    assert strict.exit_code == 1 and json.loads(strict.stdout)["status"] == "partial"


def test_check_command_shows_statuses_and_reasons():
    script = os.path.join(ROOT, "examples", "custom_rule.py")
    result = CliRunner().invoke(cli, ["check", script, "--", "--wrong"])
    assert result.exit_code == 1
    assert "FAIL" in result.stdout and "SKIPPED" in result.stdout
    assert "kernel: SKIPPED: NumPy is the spec backend: nothing to compare" in result.stdout
    ok = CliRunner().invoke(cli, ["check", script, "--strict"])
    assert ok.exit_code == 1 and "PARTIAL" in ok.stdout
