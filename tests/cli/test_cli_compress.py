"""``--compress`` on the commands that save traces (``run``, ``ab -o``): every member of the
sidecar deflated, as ``tpx_inspect.save(..., compress=True)`` writes it; without the flag the
default (a large kept float value stored); the same trace either way."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tpx_inspect.cli import cli
from tpx_inspect.format import load

SCRIPT = """
import numpy as np
import tpx as tp

w = tp.asarray(np.random.default_rng(0).standard_normal((100, 100)), requires_grad=True)
(w * 2.0).tanh().sum().backward()
"""


def _invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _methods(folder: Path) -> dict[str, int]:
    with zipfile.ZipFile(folder / "trace.npz") as z:
        return {i.filename: i.compress_type for i in z.infolist()}


RULES = """
from p10 import Op
from tpx.rules import RULES

same_tanh = RULES[Op.TANH].vjp
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("compress") / "big.py"
    path.write_text(SCRIPT)
    (path.parent / "compress_rules.py").write_text(RULES)
    return path


def _same(a: Path, b: Path) -> None:
    ga, gb = load(str(a / "trace.json")).graphs[0], load(str(b / "trace.json")).graphs[0]
    assert ga.nodes.columns == gb.nodes.columns
    for k in ("summaries", "previews", "nodes", "grads_out", "consts", "accumulations"):
        x, y = getattr(ga.tables, k), getattr(gb.tables, k)
        assert x.shape == y.shape and np.array_equal(x, y, equal_nan=True), k
    assert [v.tobytes() for v in ga.values] == [v.tobytes() for v in gb.values]


def test_run_compress_deflates_every_member(script, tmp_path):
    for name, flags in (("plain", []), ("deflated", ["--compress"])):
        result = _invoke("run", script, "-o", tmp_path / name, "--values", "all", *flags)
        assert result.exit_code == 0, result.output
    plain, deflated = _methods(tmp_path / "plain"), _methods(tmp_path / "deflated")
    assert plain["values.0.npy"] == zipfile.ZIP_STORED  # NOTE: 80 kB of random floats
    assert set(deflated.values()) == {zipfile.ZIP_DEFLATED} and set(deflated) == set(plain)
    size = {k: (tmp_path / k / "trace.npz").stat().st_size for k in ("plain", "deflated")}
    assert size["deflated"] < size["plain"]
    _same(tmp_path / "plain", tmp_path / "deflated")


def test_ab_out_compress_deflates_the_traces_of_a_and_b(script, tmp_path):
    rule = f"tanh={script.parent / 'compress_rules.py'}:same_tanh"
    result = _invoke("ab", script, "--rule", rule, "--values", "all", "-o", tmp_path / "ab",
                     "--compress")  # fmt: skip
    assert result.exit_code == 0, result.output  # NOTE: B's rule is A's: no divergence
    for name in ("a", "b"):
        assert set(_methods(tmp_path / "ab" / name).values()) == {zipfile.ZIP_DEFLATED}
