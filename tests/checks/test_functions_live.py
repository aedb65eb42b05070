"""Issue 15: custom tp.Function nodes in saved traces. The trace records each Function's
import path; ``run --check`` records the live local check's verdict for every node, which the
server shows; offline re-import happens only from the CLI with ``--trust-code``; the server
never imports user code."""

from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from tests.helpers.scripts import HIDDEN_FUNCTION, write_script
from tpx_inspect.checks import functions as fmod
from tpx_inspect.cli import cli
from tpx_inspect.format import load
from tpx_inspect.records import Trace
from tpx_inspect.server.app import create_app

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUSTOM_RULE = os.path.join(ROOT, "examples", "custom_rule.py")


def _run(*args: str) -> object:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("function-runs")
    _run("run", CUSTOM_RULE, "-o", str(root / "live"), "--check", "--", "--wrong")
    _run("run", CUSTOM_RULE, "-o", str(root / "plain"), "--", "--wrong")
    script = write_script(root, "hidden.py", HIDDEN_FUNCTION)
    _run("run", str(script), "-o", str(root / "hidden"))
    return root


def _wrong_silu(trace: Trace) -> int:
    return next(n.id for n in trace.graphs[0].nodes if n.op == "WrongSiLU")


def test_trace_records_import_path_and_live_verdicts(runs):
    trace = load(str(runs / "live" / "trace.json"))
    info = trace.meta["functions"]["WrongSiLU"]
    assert info["path"].endswith(":WrongSiLU") and info["file"].endswith("custom_rule.py")
    verdicts = {n: (s, m) for n, s, m in fmod.live_verdicts(trace.meta, 0)}
    status, message = verdicts[_wrong_silu(trace)]
    assert status == "fail" and "WrongSiLU" in message
    assert sum(s == "fail" for s, _ in verdicts.values()) == 1  # only the planted bug
    assert "live_checks" not in load(str(runs / "plain" / "trace.json")).meta


def test_server_shows_live_failure_and_partial_without_it(runs, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the server imported user code")

    monkeypatch.setattr(fmod, "import_functions", never)
    monkeypatch.setattr(fmod, "_load_file", never)
    before = set(sys.modules)
    client = TestClient(create_app([runs]))
    live = client.get("/api/runs/live/graphs/0/checks").json()
    node = _wrong_silu(load(str(runs / "live" / "trace.json")))
    local = next(c for c in live["checks"] if c["name"] == "local")
    assert live["status"] == "fail" and not live["ok"] and local["status"] == "fail"
    assert [f["node"] for f in local["findings"]] == [node]
    assert any(v["node"] == node and v["status"] == "fail" for v in live["live"])
    plain = client.get("/api/runs/plain/graphs/0/checks").json()
    local = next(c for c in plain["checks"] if c["name"] == "local")
    assert plain["status"] == "partial" and local["status"] == "partial"
    (reason,) = local["reasons"]
    assert "user code" in reason["reason"] and reason["nodes"] == [node]
    assert "PARTIAL" in plain["headline"] and "user code" in plain["headline"]
    assert not any(m.startswith("_tpx_inspect_trusted") for m in set(sys.modules) - before)


def test_cli_imports_user_code_only_with_trust_code(runs):
    plain = _run("gradcheck", str(runs / "plain"), "--json")
    data = json.loads(plain.stdout)
    assert plain.exit_code == 0 and data["status"] == "partial"
    trusted = _run("gradcheck", str(runs / "plain"), "--json", "--trust-code")
    data = json.loads(trusted.stdout)
    local = next(c for c in data["checks"] if c["check"] == "local")
    assert trusted.exit_code == 1 and local["status"] == "fail"
    assert local["findings"][0]["name"] == "WrongSiLUBackward"


def test_unimportable_function_is_partial_with_the_reason(runs):
    trace = load(str(runs / "hidden" / "trace.json"))
    assert trace.meta["functions"]["Hidden"]["importable"] is False
    result = _run("gradcheck", str(runs / "hidden"), "--json", "--trust-code")
    local = next(c for c in json.loads(result.stdout)["checks"] if c["check"] == "local")
    assert result.exit_code == 0 and local["status"] == "partial"
    (reason,) = local["reasons"]
    assert "could not be imported" in reason["reason"] and "inside a function" in reason["reason"]
    strict = _run("gradcheck", str(runs / "hidden"), "--trust-code", "--strict")
    assert strict.exit_code == 1 and "PARTIAL" in strict.stdout
