"""A missing optional package or a missing Graphviz binary gives one line naming what to
install and exit code 2: never a traceback, never a "wrote" for a file that was not written.
Simulated in-process (a ``None`` in ``sys.modules`` blocks an import; an empty PATH hides
``dot``). Also ``tpx-inspect demo`` on the examples shipped inside the package."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import tpx as tp
import tpx_inspect
from tpx_inspect import cli as cli_module
from tpx_inspect.__main__ import main
from tpx_inspect._deps import CLI_MODULES, OPTIONAL
from tpx_inspect.errors import GraphvizNotFoundError
from tpx_inspect.outputs import export_bytes

PIP_HINT = 'pip install "tpx[inspect]"'


def invoke(*args: object):
    return CliRunner().invoke(cli_module.cli, [str(a) for a in args], catch_exceptions=False)


def one_line(text: str) -> str:
    assert "Traceback" not in text
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    x = tp.ones((2, 3), requires_grad=True)
    trace = tpx_inspect.trace(lambda: (x * 2).tanh().sum().backward())
    tpx_inspect.save(trace, str(folder / "trace.json"))
    return folder


@pytest.fixture
def no_dot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.parametrize("module", CLI_MODULES)
def test_the_console_script_names_the_extra_of_a_missing_package(module, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    line = one_line(err)
    assert line.startswith("Error: tpx-inspect needs the Python package ")
    assert OPTIONAL[module][0] in line and line.endswith(PIP_HINT)
    assert out == ""


def test_the_console_script_runs_the_cli_when_all_is_installed(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0 and "demo" in capsys.readouterr().out


def test_export_without_the_graphviz_package_writes_nothing(run_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    out = tmp_path / "g.dot"
    result = invoke("export", run_dir, "--format", "dot", "-o", out)
    assert result.exit_code == 2
    line = one_line(result.output)
    assert "graphviz" in line and line.endswith(PIP_HINT) and "wrote" not in line
    assert not out.exists()


def test_serve_without_uvicorn_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "tpx_inspect.server.serve", raising=False)
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    result = invoke("serve", tmp_path, "--port", "0")
    assert result.exit_code == 2
    assert one_line(result.output) == f"Error: {cli_module.missing_message(['uvicorn'])}"


@pytest.mark.parametrize("fmt", ["svg", "png", "pdf", "html"])
def test_export_without_the_dot_binary_names_graphviz(run_dir, tmp_path, no_dot, fmt):
    out = tmp_path / f"g.{fmt}"
    result = invoke("export", run_dir, "--format", fmt, "-o", out)
    assert result.exit_code == 2
    line = one_line(result.output)
    assert line.startswith(f"Error: {fmt} export: the Graphviz binaries (`dot`) are not installed")
    assert "apt-get install graphviz" in line and "wrote" not in line
    assert not out.exists()


def test_dot_export_needs_no_binary(run_dir, tmp_path, no_dot):
    out = tmp_path / "g.dot"
    result = invoke("export", run_dir, "-o", out)
    assert result.exit_code == 0 and f"wrote {out}" in result.output
    assert out.read_text().startswith("digraph")


def test_html_page_without_dot_is_an_error_only_when_the_picture_is_required(run_dir, no_dot):
    trace = tpx_inspect.load(str(run_dir / "trace.json"))
    page, _ = export_bytes(trace, trace.graphs[0], "html")
    assert b"Graphviz binaries" in page and b"digraph" in page  # the server's fallback page
    with pytest.raises(GraphvizNotFoundError, match="apt-get install graphviz"):
        export_bytes(trace, trace.graphs[0], "html", require_picture=True)


def test_demo_help_names_its_options():
    result = invoke("demo", "--help")
    assert result.exit_code == 0
    for option in ("--quick", "--no-serve", "--port", "--host", "--out"):
        assert option in result.output


def test_demo_without_the_shipped_examples_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(cli_module, "EXAMPLES_DIR", tmp_path)
    result = invoke("demo", "--quick", "--no-serve")
    assert result.exit_code == 2
    assert "examples are missing" in one_line(result.output)


def test_demo_without_scikit_learn_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    result = invoke("demo", "--quick", "--no-serve")
    assert result.exit_code == 2
    line = one_line(result.output)
    assert "tpx-inspect demo needs the Python package scikit-learn" in line
    assert line.endswith('pip install "tpx[data]"')


@pytest.mark.slow
def test_demo_quick_without_serving_records_the_shipped_mlp(tmp_path):
    assert (cli_module.EXAMPLES_DIR / "train_mlp.py").is_file()
    out = tmp_path / "demo-run"
    result = invoke("demo", "--quick", "--no-serve", "-o", out)
    assert result.exit_code == 0, result.output
    assert "train_mlp.py --quick under capture" in result.output
    trace = tpx_inspect.load(str(out / "trace.json"))
    assert trace.runs[0].name == "train_mlp" and len(trace.graphs) > 0
    assert "serving" not in result.output
