"""PyTorch programs that port to TPX by changing only their import lines.

Each program under ``programs/`` is PyTorch code written fresh in PyTorch's own style, with a
``main(tmpdir)`` that returns its losses, gradients and other results. It runs twice: as
written, against PyTorch, and with its ``import torch...`` lines rewritten to TPX (``import
tpx as torch``, ``import tpx.nn as nn``, ``from tpx.utils.data import ...``); no other line
changes, which the tests check. Both runs start from the same weights (drawn with NumPy), in
float64, and must agree to 1e-10. Without PyTorch, only the TPX runs happen (checked for
finite results); the comparisons are skipped with the reason.
"""

from __future__ import annotations

import math
import re
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tpx

PROGRAMS = Path(__file__).parent / "programs"
NAMES = sorted(p.stem for p in PROGRAMS.glob("*.py"))
TOL = 1e-10

_IMPORT = re.compile(r"^(import|from) torch\b")


def port(source: str) -> str:
    """``source`` with each ``import torch...``/``from torch... import`` line moved to tpx."""
    out = []
    for line in source.splitlines(keepends=True):
        if line.startswith("import torch "):  # `import torch as t`: keep the given alias
            line = line.replace("import torch ", "import tpx ", 1)
        elif line.rstrip() == "import torch":
            line = "import tpx as torch\n"
        elif line.startswith(("import torch.", "from torch.", "from torch ")):
            line = line.replace("torch", "tpx", 1)
        out.append(line)
    return "".join(out)


def load(name: str, flavour: str) -> types.ModuleType:
    """Program ``name`` as a fresh module, as written (``torch``) or ported (``tpx``)."""
    path = PROGRAMS / f"{name}.py"
    source = path.read_text()
    if flavour == "tpx":
        source = port(source)
    module = types.ModuleType(f"porting_{name}_{flavour}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def run(name: str, flavour: str, tmp_path: Path) -> dict[str, Any]:
    folder = tmp_path / flavour
    folder.mkdir()
    if flavour == "torch":
        import torch

        torch.set_num_threads(1)  # 2-core CI machines: intra-op threads only add contention
        previous = torch.get_default_dtype()
        try:
            return load(name, flavour).main(str(folder))
        finally:
            torch.set_default_dtype(previous)
    previous = tpx.get_default_dtype()
    try:
        return load(name, flavour).main(str(folder))
    finally:
        tpx.set_default_dtype(previous)


def compare(ours: Any, theirs: Any, where: str) -> None:
    """Numbers within TOL (relative to their size, absolute near 0), arrays too, recursively;
    ``exact`` entries equal; strings (sampled text) only of the same kind."""
    if isinstance(ours, dict):
        assert sorted(ours) == sorted(theirs), where
        for k in ours:
            if k == "exact":
                assert ours[k] == theirs[k], f"{where}.{k}: {ours[k]} != {theirs[k]}"
            elif k != "samples":  # NOTE: TPX's and PyTorch's generators differ
                compare(ours[k], theirs[k], f"{where}.{k}")
        return
    if isinstance(ours, (list, tuple)) and not isinstance(ours, str):
        assert len(ours) == len(theirs), f"{where}: {len(ours)} values, PyTorch {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            compare(a, b, f"{where}[{i}]")
        return
    if isinstance(ours, str):
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"
        return
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    assert a.shape == b.shape, f"{where}: shape {a.shape}, PyTorch {b.shape}"
    np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL, err_msg=where)


def leaves(result: Any) -> list[float]:
    if isinstance(result, dict):
        return [v for k in result for v in leaves(result[k]) if k != "samples"]
    if isinstance(result, (list, tuple)):
        return [v for r in result for v in leaves(r)]
    if isinstance(result, str):
        return []
    return [float(v) for v in np.asarray(result, dtype=np.float64).ravel()]


@pytest.mark.parametrize("name", NAMES)
def test_only_import_lines_differ(name: str) -> None:
    source = (PROGRAMS / f"{name}.py").read_text().splitlines()
    ported = port("\n".join(source)).splitlines()
    changed = [(a, b) for a, b in zip(source, ported) if a != b]
    assert len(source) == len(ported) and changed
    for before, after in changed:
        assert _IMPORT.match(before) and "tpx" in after and "torch" not in after.split(" as ")[0]


def test_port_rewrites_each_import_form() -> None:
    src = "import torch\nimport torch.nn as nn\nfrom torch.utils.data import X\nx = torch.ones(2)\n"
    assert port(src) == (
        "import tpx as torch\nimport tpx.nn as nn\nfrom tpx.utils.data import X\n"
        "x = torch.ones(2)\n"
    )


def test_compare_fails_on_a_planted_difference() -> None:
    compare({"losses": [1.0, 2.0]}, {"losses": [1.0, 2.0 + 1e-12]}, "ok")
    with pytest.raises(AssertionError):
        compare({"losses": [1.0, 2.0]}, {"losses": [1.0, 2.0 + 1e-8]}, "planted")
    with pytest.raises(AssertionError):
        compare({"exact": [1, 2]}, {"exact": [2, 1]}, "planted")


@pytest.mark.parametrize("name", NAMES)
def test_program_runs_on_tpx(name: str, tmp_path: Path) -> None:
    result = run(name, "tpx", tmp_path)
    values = leaves(result)
    assert values and all(math.isfinite(v) for v in values)
    assert result["losses"][-1] < result["losses"][0]  # it trained


@pytest.mark.parametrize("name", NAMES)
def test_program_matches_pytorch(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="PyTorch is not installed: nothing to compare with")
    compare(run(name, "tpx", tmp_path), run(name, "torch", tmp_path), name)
