"""Small scripts for the CLI tests, and runs of them made with ``tpx-inspect run``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tpx_inspect.cli import cli

TRAIN = """\
import sys
import tpx as tp

w = tp.asarray([[0.5, -1.0], [1.5, 0.25]], requires_grad=True)
for step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 2):
    x = tp.asarray([[1.0, 2.0]]) * (step + 1)
    with tp.scope("layer"):
        h = (x @ w).tanh()
    loss = (h * h).sum()
    loss.backward()
print("trained", len(sys.argv))
"""

CRASH = """\
import tpx as tp

x = tp.asarray([1.0, 2.0], requires_grad=True)
(x * 3).sum().backward()
y = x.exp()
raise RuntimeError("boom after one step")
"""

NAN = """\
import numpy as np
import tpx as tp

x = tp.asarray([1.0, -1.0], requires_grad=True)
with np.errstate(invalid="ignore"):
    (x.log() * 2).sum().backward()
"""

ARGV = """\
import os, sys
out = sys.argv[1]
with open(out, "w") as f:
    f.write(repr((__name__, sys.argv[1:], os.path.dirname(os.path.abspath(sys.path[0])),
                  os.path.abspath(sys.path[0]))))
raise SystemExit(int(sys.argv[2]))
"""


@pytest.fixture(scope="session")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("scripts")
    for name, text in {
        "train.py": TRAIN,
        "crash.py": CRASH,
        "nan.py": NAN,
        "argv.py": ARGV,
    }.items():
        (d / name).write_text(text)
    (d / "notes.txt").write_text("not python\n")
    return d


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, **kwargs)


@pytest.fixture(scope="session")
def runs(scripts: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run folders ``train`` (2 steps), ``train3`` (3 steps), ``nan``, made by the CLI."""
    root = tmp_path_factory.mktemp("runs")
    for name, script, args in (("train", "train.py", []), ("train3", "train.py", ["3"]),
                               ("nan", "nan.py", [])):  # fmt: skip
        result = invoke("run", scripts / script, "-o", root / name, "--policy", "all",
                        "--values", "all", *args)  # fmt: skip
        assert result.exit_code == 0, result.output
    return root
