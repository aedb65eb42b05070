"""No import cycle between ``tpx`` and its subpackages: nn, optim, data and utils are built on
tpx and loaded when first used (``tpx.__getattr__``), whichever is imported first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.load import load_tool

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    return load_tool("import_cycles")


def test_tpx_has_no_module_level_import_cycle() -> None:
    tool = _tool()
    assert tool.cycles("tpx") == []
    assert tool.main(["--check", "tpx"]) == 0
    assert tool.cycles("tpx", function_level=True) == []  # not even through function imports


def test_the_check_fails_on_a_planted_package_cycle(tmp_path: Path) -> None:
    # the shape tpx had: the package imports a subpackage that imports the package
    (tmp_path / "pkg" / "nn").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg import nn\n")
    (tmp_path / "pkg" / "nn" / "__init__.py").write_text("import pkg as p\n")
    assert _tool().cycles("pkg", root=tmp_path) == [["pkg", "pkg.nn"]]


def _run(code: str) -> str:
    env = {"PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_subpackages_load_on_first_use_in_either_order() -> None:
    out = _run(
        "import sys, tpx\n"
        "print('tpx.nn' in sys.modules, 'tpx.optim' in sys.modules)\n"
        "print(tpx.nn.Linear(2, 1).weight.shape, tpx.save is tpx.nn.save, tpx.optim.SGD.__name__)\n"
        "print(sorted({'nn', 'optim', 'data', 'utils', 'load', 'save'} - set(tpx.__all__)))\n"
        "print('nn' in dir(tpx))"
    )
    assert out.splitlines() == ["False False", "(1, 2) True SGD", "[]", "True"]
    out = _run(
        "import tpx.nn as nn\nimport tpx\nprint(tpx.nn is nn, tpx.load is nn.load)\n"
        "from tpx.utils.data import DataLoader\nprint(DataLoader.__name__)"
    )
    assert out.splitlines() == ["True True", "DataLoader"]


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    import tpx

    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        tpx.nonexistent  # noqa: B018
