"""Every command of ``tpx-inspect`` through click's CliRunner, and every bad-input error."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tpx_inspect.cli import cli
from tpx_inspect.export.render import graphviz_available
from tpx_inspect.format import load


def invoke(*args: object, **kwargs):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, **kwargs)


COMMANDS = ["run", "serve", "show", "export", "diff", "gradcheck", "check"]


def test_version_and_help_with_an_example_on_every_command():
    assert invoke("--version").output.strip() == "tpx-inspect, version 0.1.0"
    for name in COMMANDS:
        result = invoke(name, "--help")
        assert (
            result.exit_code == 0 and "Example:" in result.output and "tpx-inspect" in result.output
        )


def test_run_writes_a_trace_and_prints_a_summary(scripts, tmp_path):
    result = invoke("run", scripts / "train.py", "-o", tmp_path / "r")
    assert result.exit_code == 0, result.output
    assert "trained 1" in result.output, "the script's own output"
    assert f"trace: {tmp_path / 'r' / 'trace.json'}" in result.output
    assert "graphs: 2 kept of 2 backward steps, nodes: 10" in result.output
    assert "non-finite values: none" in result.output
    assert len(load(str(tmp_path / "r" / "trace.json")).graphs) == 2


def test_run_of_the_mlp_example_names_its_parameters_by_path(tmp_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "train_mlp.py"
    result = invoke("run", example, "--quick", "-o", tmp_path / "mlp")
    assert result.exit_code == 0, result.output
    g = load(str(tmp_path / "mlp" / "trace.json")).graphs[0]
    assert [(n.kind, n.label) for n in g.nodes if n.op is None] == [
        ("param", f"model.{i}.{p}") for i in (0, 2, 4) for p in ("weight", "bias")
    ]


@pytest.mark.parametrize("values", ["none", "small", "all"])
def test_run_value_policies(scripts, tmp_path, values):
    result = invoke("run", scripts / "train.py", "-o", tmp_path, "--values", values,
                    "--value-limit", "3")  # fmt: skip
    assert result.exit_code == 0, result.output
    g = load(str(tmp_path / "trace.json")).graphs[0]
    kept = [g.value(g.output(i)) is not None for i in range(len(g.nodes))]  # w is 2x2: 4 > 3
    assert kept == {"none": [False] * 5, "small": [False, True, True, True, True],
                    "all": [True] * 5}[values]  # fmt: skip


def test_run_default_folder_is_under_tpx_runs(scripts, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("run", scripts / "train.py").exit_code == 0
    (folder,) = (tmp_path / "tpx-runs").iterdir()
    assert folder.name.startswith("train-") and (folder / "trace.json").is_file()


def test_run_passes_arguments_and_options_through(scripts, tmp_path):
    out = tmp_path / "argv.txt"
    result = invoke("run", scripts / "argv.py", "-o", tmp_path / "r", "--", out, "0", "--flag")
    assert result.exit_code == 0, result.output
    name, args, _, path0 = ast.literal_eval(out.read_text())
    assert (name, args, Path(path0)) == ("__main__", [str(out), "0", "--flag"], scripts)
    three = invoke("run", scripts / "train.py", "3", "-o", tmp_path / "s")
    assert three.exit_code == 0 and "graphs: 3 kept of 3 backward steps" in three.output


def test_run_passes_the_exit_code_through(scripts, tmp_path):
    result = invoke("run", scripts / "argv.py", "-o", tmp_path / "r", "--", tmp_path / "a", "3")
    assert result.exit_code == 3
    assert "script exited with code 3" in result.output


def test_a_crashing_script_still_leaves_its_trace(scripts, tmp_path):
    result = invoke("run", scripts / "crash.py", "-o", tmp_path / "r")
    assert result.exit_code == 1
    trace = load(str(tmp_path / "r" / "trace.json"))
    assert trace.runs[0].status == "error" and "boom" in trace.runs[0].error.message
    assert trace.graphs[0].kind == "backward"
    assert "RuntimeError: boom after one step" in result.output


def test_run_reports_nonfinite_values(runs):
    result = invoke("show", runs / "nan")
    assert result.exit_code == 0 and "non-finite" in result.output


def test_run_summary_names_nonfinite_graphs(scripts, tmp_path):
    result = invoke("run", scripts / "nan.py", "-o", tmp_path / "r")
    assert "non-finite values found in 1 graphs: graph 0" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.py"], "script not found: missing.py"),
        (["run", "{scripts}/notes.txt"], "not a Python file"),
        (["run", "{scripts}/train.py", "--values", "most"], "Invalid value for '--values'"),
        (["run", "{scripts}/train.py", "--policy", "sometimes"], "unknown capture policy"),
        (["show", "nowhere"], "no trace at nowhere"),
        (["show", "{scripts}/notes.txt"], "notes.txt"),
        (["show", "{runs}/train", "--graph", "7"], "unknown graph 7"),
        (["export", "{runs}/train", "-o", "x.gif"], "unknown format 'gif'"),
        (["export", "{runs}/train", "--format", "jpeg", "-o", "x"], "unknown format 'jpeg'"),
        (["export", "{runs}/train", "--graph", "9", "-o", "x.dot"], "unknown graph 9"),
        (["diff", "{runs}/train", "nowhere"], "no trace at nowhere"),
        (["diff", "{runs}/train", "{runs}/nan", "--graph-b", "4"], "unknown graph 4"),
        (["serve", "nowhere"], "no such run folder: nowhere"),
        (["check", "missing.py"], "script not found"),
        (["gradcheck", "nowhere.py::f"], "target file not found"),
        (["show"], "Missing argument 'TRACE'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, scripts, runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [a.format(scripts=scripts, runs=runs) for a in args]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_debug_shows_the_traceback(runs):
    result = CliRunner().invoke(cli, ["--debug", "show", str(runs / "train"), "--graph", "7"])
    assert result.exit_code == 2  # the CLI's own check: one line even with --debug
    result = CliRunner().invoke(cli, ["--debug", "export", str(runs / "train"), "-o", "x.gif"])
    assert result.exit_code == 2
    broken = runs.parent / "broken.json"
    broken.write_text("{not json")
    plain = CliRunner().invoke(cli, ["show", str(broken)])
    assert plain.exit_code == 2 and "Traceback" not in plain.output
    debug = CliRunner().invoke(cli, ["--debug", "show", str(broken)])
    assert debug.exception is not None and not isinstance(debug.exception, SystemExit)


def test_show_lists_graphs_then_nodes_in_backward_order(runs):
    result = invoke("show", runs / "train", "--graph", "1")
    assert result.exit_code == 0
    out = result.output
    assert out.index("graphs") < out.index("graph 1: nodes in backward order (5)")
    node_rows = [line.split("│") for line in out.splitlines() if "float" in line]
    assert [(r[1].strip(), r[3].strip()) for r in node_rows] == [
        ("0", "sum"), ("1", "mul"), ("2", "tanh"), ("3", "matmul"), ("4", "leaf"),
    ]  # fmt: skip
    assert "grad norm" in out and "saved" in out


@pytest.mark.parametrize("fmt", ["dot", "json", "model-explorer", "html", "svg", "png", "pdf"])
def test_export_every_format(runs, tmp_path, fmt):
    if fmt in ("svg", "png", "pdf", "html") and not graphviz_available():
        pytest.skip("Graphviz binaries not installed")
    out = tmp_path / f"g.{fmt}"
    result = invoke("export", runs / "train", "--format", fmt, "--graph", "1", "-o", out)
    assert result.exit_code == 0 and f"wrote {out}" in result.output
    head = {"dot": b"digraph", "svg": b"<?xml", "png": b"\x89PNG", "pdf": b"%PDF",
            "html": b"<!DOCTYPE html>", "json": b"{", "model-explorer": b"{"}[fmt]  # fmt: skip
    assert out.read_bytes().startswith(head)


def test_export_format_from_the_suffix_and_html_is_self_contained(runs, tmp_path):
    if not graphviz_available():
        pytest.skip("Graphviz binaries not installed")
    out = tmp_path / "page.html"
    assert invoke("export", runs / "train", "-o", out).exit_code == 0
    page = out.read_text()
    assert "<table>" in page and "<script" not in page and 'src="http' not in page


def test_diff_of_two_runs(runs):
    result = invoke("diff", runs / "train", runs / "train3", "--graph-a", "0", "--graph-b", "2")
    assert result.exit_code == 0 and "same structure: True" in result.output
    assert "values" in result.output
    as_json = json.loads(invoke("diff", runs / "train", runs / "nan", "--json").output)
    assert not as_json["same_structure"] and as_json["added"] + as_json["removed"] > 0
    same = json.loads(invoke("diff", runs / "train", runs / "train", "--json").output)
    assert same["changed"] == 0


def test_check_passes_on_a_correct_script_and_fails_on_a_nan(scripts):
    ok = invoke("check", scripts / "train.py", "--json")
    assert ok.exit_code == 0, ok.output
    assert not json.loads(ok.stdout)["failed"] and "trained" in ok.stderr
    bad = invoke("check", scripts / "nan.py")
    assert bad.exit_code == 1 and "nonfinite" in bad.output


def test_gradcheck_targets():
    ok = invoke("gradcheck", "examples/custom_rule.py::loss", "--json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["status"] in ("pass", "partial")
    wrong = invoke("gradcheck", "examples/custom_rule.py::wrong_loss")
    assert wrong.exit_code == 1 and "FAIL" in wrong.output


def test_gradcheck_of_a_saved_trace(runs):
    assert invoke("gradcheck", runs / "train", "--json").exit_code == 0
    assert invoke("gradcheck", runs / "nan").exit_code == 1


def test_serve_refuses_a_busy_port(runs):
    from tpx_inspect.server.serve import bind

    sock = bind("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", str(runs), "--port", str(port)])
    finally:
        sock.close()
    assert result.exit_code == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.output


def test_run_serve_refuses_a_busy_port_before_running_the_script(scripts, tmp_path):
    from tpx_inspect.server.serve import bind

    sock = bind("127.0.0.1", 0)
    try:
        port = str(sock.getsockname()[1])
        args = ["run", str(scripts / "train.py"), "--serve", "--port", port, "-o", str(tmp_path)]
        result = CliRunner().invoke(cli, args)
    finally:
        sock.close()
    assert result.exit_code == 2 and "already in use" in result.output
    assert "trained" not in result.output and not (tmp_path / "trace.json").exists()


def test_serve_warns_for_a_non_local_address(runs, monkeypatch):
    import tpx_inspect.server.serve as serve_mod

    served = []
    monkeypatch.setattr(serve_mod, "serve_forever", lambda app, sock: served.append(sock.close()))
    result = CliRunner().invoke(cli, ["serve", str(runs), "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 0, result.output
    assert "Warning: serving on 0.0.0.0" in result.output and served
    local = CliRunner().invoke(cli, ["serve", str(runs), "--port", "0"])
    assert "Warning" not in local.output and "serving http://127.0.0.1:" in local.output


def test_python_dash_m_works():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tpx_inspect", "--version"], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "0.1.0" in done.stdout
