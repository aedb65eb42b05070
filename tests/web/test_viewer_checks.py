"""Issue 15 in the viewer: "Run checks" shows the same statuses as the CLI. The README's planted
bug (``examples/custom_rule.py --wrong``, recorded with ``run --check``) rings the WrongSiLU
node as failing and the status bar says so; a run whose custom Function cannot be imported
shows PARTIAL with the reason and marks that node as skipped."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers.scripts import HIDDEN_FUNCTION, write_script

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def check_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tpx_inspect.cli import cli
    from tpx_inspect.server.app import create_app
    from tpx_inspect.server.serve import ServerThread, bind

    root = tmp_path_factory.mktemp("check-runs")
    example = os.path.join(ROOT, "examples", "custom_rule.py")
    runner = CliRunner()
    wrong = runner.invoke(cli, ["run", example, "-o", str(root / "custom-wrong"), "--check",
                                "--", "--wrong"])  # fmt: skip
    assert wrong.exit_code == 0 and "1 fail" in wrong.output, wrong.output
    write_script(root, "hidden.py", HIDDEN_FUNCTION)
    hidden = runner.invoke(cli, ["run", str(root / "hidden.py"), "-o", str(root / "hidden")])
    assert hidden.exit_code == 0, hidden.output
    thread = ServerThread(create_app([root], web_dir=ROOT / "web"), bind("127.0.0.1", 0))
    thread.start()
    yield thread.url.rstrip("/")
    thread.stop(timeout=10)


@pytest.fixture
def v(viewer, check_server):
    """The shared viewer fixture (console errors fail the test) on this module's runs."""
    viewer.base = check_server
    return viewer


def _mark(v, node: int) -> str | None:
    return v.page.evaluate(
        "(id) => { const t = window.tpxViewer; const b = t.boxOf(id);"
        " return b ? (t.main.marked.get(b.id) ?? null) : null; }",
        node,
    )


def test_custom_rule_wrong_rings_wrong_silu_as_failing(v):
    v.open("run=custom-wrong&graph=0")
    assert "not run" in v.page.inner_text("#panel") or v.state("!s.checked")
    v.page.click("#checks")
    v.wait("s.checked && s.selected !== null")
    v.page.wait_for_function("() => document.querySelector('#status').textContent.includes('FAIL')")
    node = v.state("s.nodes.find(n => n.op === 'WrongSiLU').id")
    assert v.page.get_attribute("body", "data-checked") == "fail"
    status = v.status()
    assert status.startswith("checks: FAIL") and "local failed on 1 node" in status
    assert "pass" not in status.split("FAIL")[0]
    assert v.state("s.selected") == node and v.state(f"s.findings.has({node})")
    assert v.state("[...s.findings.keys()]") == [node]  # only the planted bug
    assert _mark(v, node) == "fail"
    v.page.wait_for_selector("#node-checks li.fail")
    panel = v.page.inner_text("#panel")
    assert "FAIL local" in panel and "WrongSiLU" in panel and "all checks pass" not in panel
    assert "SKIPPED kernel: NumPy is the spec backend" in panel
    assert v.page.inner_text("#check-status").startswith("checks: FAIL")


def test_unimportable_function_shows_partial_with_the_reason(v):
    v.open("run=hidden&graph=0")
    v.page.keyboard.press("x")
    v.wait("s.checked")
    assert v.page.get_attribute("body", "data-checked") == "partial"
    status = v.status()
    assert status.startswith("checks: PARTIAL") and "Hidden" in status
    assert "defined inside a function" in status
    node = v.state("s.nodes.find(n => n.op === 'Hidden').id")
    assert v.state(f"s.skips.has({node})") and v.state("s.findings.size") == 0
    assert _mark(v, node) == "skipped"
    v.page.evaluate("(id) => window.tpxViewer.select(id)", node)
    v.page.wait_for_selector("#node-checks li.skipped")
    panel = v.page.inner_text("#panel")
    assert "SKIPPED local: tp.Function 'Hidden'" in panel and "cannot be imported" in panel
    verdict = v.page.inner_text("#check-status")  # stays after the selection
    assert verdict.startswith("checks: PARTIAL") and "Hidden" in verdict
