"""`tpx-inspect run` under faults: signals, kill -9, worker threads, chdir, a failing save.

The signal tests run the CLI in a real subprocess, wait until the script has completed three
backward steps, signal it, and then load the trace that the run folder kept.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import tpx_inspect
from tpx_inspect.cli import cli

ROOT = Path(__file__).resolve().parents[2]

# three steps, then a marker file, then a wait that only a signal ends
STEPS_THEN_WAIT = """\
import sys, time
import tpx as tp

w = tp.asarray([[0.5, -1.0], [1.5, 0.25]], requires_grad=True)
for step in range(3):
    (tp.asarray([[1.0, 2.0]]) @ w).tanh().sum().backward()
open(sys.argv[1], "w").close()
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    time.sleep(0.02)
raise SystemExit(7)
"""

THREADS = """\
import threading
import tpx as tp

w = tp.ones(3, requires_grad=True)

def work(k):
    (w * float(k + 1)).sum().backward()

threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""

CHDIR = """\
import os, sys
import tpx as tp

os.chdir(sys.argv[1])
x = tp.ones(2, requires_grad=True)
(x * 3).sum().backward()
raise SystemExit(int(sys.argv[2]))
"""


def _start(script: Path, out: Path, marker: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "tpx_inspect", "run", str(script), "-o", str(out)]
    cmd += ["--policy", "all", "--", str(marker)]
    return subprocess.Popen(
        cmd, cwd=script.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
    )  # fmt: skip


def _default_sigint() -> None:
    # NOTE: a test runner started in the background (`pytest &`) inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: give the child the default
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(marker: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while not marker.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended early ({proc.returncode}): {out!r} {err!r}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the script never reached its third step")
        time.sleep(0.05)


def _signalled_run(tmp_path: Path, how: int) -> tuple[int, str, tpx_inspect.Trace]:
    script = tmp_path / "steps.py"
    script.write_text(STEPS_THEN_WAIT)
    out, marker = tmp_path / "run", tmp_path / "marker"
    proc = _start(script, out, marker)
    _wait_for(marker, proc)
    proc.send_signal(how)
    try:
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the run did not end after signal {how}")
    return proc.returncode, err.decode(), tpx_inspect.load(str(out / "trace.json"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_terminating_signal_saves_the_trace_and_exits_by_the_signal(tmp_path, sig):
    signum = getattr(signal, sig, None)
    if signum is None:
        pytest.skip(f"{sig} does not exist on this platform")
    code, _, trace = _signalled_run(tmp_path, signum)
    assert code == -signum  # ended by the signal itself, as without tpx-inspect
    assert [g.step for g in trace.graphs if g.kind == "backward"] == [0, 1, 2]
    run = trace.runs[0]
    assert run.status == "error" and run.error is not None
    assert run.error.type == "Terminated" and sig in run.error.message
    # the final save, which replaced the checkpoint
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["trace.json", "trace.npz"]


@pytest.mark.slow
def test_sigint_saves_the_trace_and_exits_130(tmp_path):
    code, err, trace = _signalled_run(tmp_path, signal.SIGINT)
    assert code == 130
    assert [g.step for g in trace.graphs if g.kind == "backward"] == [0, 1, 2]
    assert trace.runs[0].error.type == "KeyboardInterrupt"
    assert "Traceback" not in err


@pytest.mark.slow
def test_kill_9_keeps_every_step_completed_before_it(tmp_path):
    code, _, trace = _signalled_run(tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    # the checkpoint written after the third backward, before the marker
    assert [g.step for g in trace.graphs] == [0, 1, 2]
    assert trace.runs[0].status == "running"
    grads = [g.grad(0) for g in trace.graphs]
    assert all(g is not None and g.shape == (2, 2) for g in grads)
    files = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert files == ["trace.checkpoint-0.npz", "trace.checkpoint-1.npz", "trace.json"]


def _invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_run_records_backward_passes_of_every_thread_by_default(tmp_path):
    script = tmp_path / "threads.py"
    script.write_text(THREADS)
    result = _invoke("run", script, "-o", tmp_path / "r", "--policy", "all")
    assert result.exit_code == 0, result.output
    trace = tpx_inspect.load(str(tmp_path / "r" / "trace.json"))
    backward = [g for g in trace.graphs if g.kind == "backward"]
    assert len(backward) == 4  # one graph per thread, not one mixed graph
    assert sorted(g.grad(0).mean for g in backward) == [1.0, 2.0, 3.0, 4.0]
    only_main = _invoke(
        "run", script, "-o", tmp_path / "m", "--policy", "all", "--threads", "current"
    )
    assert only_main.exit_code == 0
    assert tpx_inspect.load(str(tmp_path / "m" / "trace.json")).graphs == ()


def test_a_script_that_changes_directory_moves_no_trace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = tmp_path / "chdir.py"
    script.write_text(CHDIR)
    result = _invoke("run", script, "-o", "r", "--", elsewhere, "0")
    assert result.exit_code == 0, result.output
    assert os.getcwd() == str(tmp_path)  # restored after the script
    assert (tmp_path / "r" / "trace.json").is_file()
    assert not (elsewhere / "r").exists()
    assert "trace: r/trace.json" in result.output.replace(os.sep, "/")
    assert len(tpx_inspect.load("r/trace.json").graphs) == 1


@pytest.mark.parametrize("script_code", [0, 3])
def test_a_failing_save_keeps_the_script_exit_code_and_says_why(tmp_path, monkeypatch, script_code):
    script = tmp_path / "chdir.py"
    script.write_text(CHDIR)

    def disk_full(self, path, trace=None, compress=None):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tpx_inspect.Capture, "save", disk_full)
    result = CliRunner().invoke(
        cli, ["run", str(script), "-o", str(tmp_path / "r"), "--", str(tmp_path), str(script_code)]
    )
    assert result.exit_code == script_code
    assert "could not save the trace" in result.stderr
    assert "No space left on device" in result.stderr
    # the checkpoint written after the step is still a readable trace
    assert len(tpx_inspect.load(str(tmp_path / "r" / "trace.json")).graphs) == 1


def test_a_failing_checkpoint_never_stops_the_script(tmp_path, monkeypatch):
    script = tmp_path / "chdir.py"
    script.write_text(CHDIR)

    def disk_full(trace, path, **options):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sys.modules["tpx_inspect._checkpoint"], "save", disk_full)
    result = CliRunner().invoke(
        cli, ["run", str(script), "-o", str(tmp_path / "r"), "--", str(tmp_path), "0"]
    )
    assert result.exit_code == 0, result.output
    assert "checkpoints stopped: OSError" in result.stderr
    assert len(tpx_inspect.load(str(tmp_path / "r" / "trace.json")).graphs) == 1
