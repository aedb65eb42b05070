"""Progress of ``tpx-inspect check`` on big graphs: node counts and an ETA on a terminal, a
one-line log every few seconds otherwise, counts that reach the total, and ``--only``."""

from __future__ import annotations

import io
import re

import numpy as np
from click.testing import CliRunner

import tpx as tp
from tpx_inspect import _progress
from tpx_inspect._progress import CheckProgress
from tpx_inspect.checks import LocalOptions, capture_call, run_graph_checks
from tpx_inspect.cli import cli

SCRIPT = (
    "import tpx as tp\nx = tp.ones((3, 3), requires_grad=True)\nh = x\n"
    "for _ in range(60):\n    h = (h * 0.5).sin()\nh.sum().backward()\n"
)


def _chain(n: int = 40):
    x = tp.asarray(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)

    def f(x):
        h = x
        for _ in range(n):
            h = (h * 0.9).tanh()
        return h.sum()

    return capture_call(f, [x])


def test_node_progress_counts_every_node_up_to_the_total():
    graph = _chain()
    seen = []
    report = run_graph_checks(graph, ["local", "order"], local_options=LocalOptions(batch_size=8),
                              node_progress=lambda *a: seen.append(a))  # fmt: skip
    local = [(done, total) for name, done, total in seen if name == "local"]
    assert report.result("local").checked == local[-1][1] == local[-1][0] > 0
    assert [d for d, _ in local] == sorted(d for d, _ in local) and len(local) > 2


def test_the_log_line_has_counts_percent_and_an_eta():
    out = io.StringIO()
    with CheckProgress(out, every=0.0, tty=False) as p:
        p.check("local", 0, 2)
        p.nodes("local", 25, 100)
        p.nodes("local", 100, 100)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"check local: 25/100 nodes \(25%\), \d+ s, ETA \d+ s", lines[0])
    assert lines[1].startswith("check local: 100/100 nodes (100%)")


def test_the_log_is_one_line_every_few_seconds_not_one_per_batch():
    out = io.StringIO()
    with CheckProgress(out, every=3600.0, tty=False) as p:
        p.check("local", 0, 1)
        for done in range(1, 50):
            p.nodes("local", done, 50)
    assert out.getvalue() == ""


def test_a_terminal_gets_a_bar_with_node_counts_and_time_remaining():
    from rich.progress import MofNCompleteColumn, TimeRemainingColumn

    with CheckProgress(io.StringIO(), tty=True) as p:
        columns = {type(c) for c in p.bar.columns}
        assert {MofNCompleteColumn, TimeRemainingColumn} <= columns
        p.check("local", 0, 2)
        p.nodes("local", 30, 120)
        task = p.bar.tasks[0]
        assert (task.completed, task.total, task.description) == (30, 120, "check local (nodes)")


def test_cli_check_logs_progress_when_not_a_terminal(tmp_path, monkeypatch):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    real = _progress.CheckProgress.__init__

    def every_batch(self, stream=None, every=5.0, tty=None):
        real(self, stream, 0.0, tty)

    monkeypatch.setattr(_progress.CheckProgress, "__init__", every_batch)
    result = CliRunner().invoke(cli, ["check", str(script), "--only", "local,order"])
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("check local:")]
    assert lines and re.match(r"check local: (\d+)/\1 nodes \(100%\)", lines[-1])
    assert "accumulation" not in result.stdout and "order" in result.stdout
