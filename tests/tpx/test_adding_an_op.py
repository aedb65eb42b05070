"""docs/adding-an-op.md stays true: its code blocks are the code of ``sinh``, and applied to a
copy of the tree under a test-only name they give an op that passes the kernel and rule tests.

A block of the page marked ``file=PATH at=WHERE`` is inserted into PATH: ``before:NAME`` whole,
above the top-level assignment NAME; ``end-of:NAME`` its indented lines but ``...,`` (the
entries above), before the closing bracket of NAME.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adding-an-op.md"
BLOCK = re.compile(r"```python file=(\S+) at=(\S+)\n(.*?)```", re.S)
NEW = "sinh_walk"  # the test-only name the walk adds


def _blocks() -> list[tuple[str, str, str]]:
    """(file, where, code to insert) of each block of the page."""
    blocks = []
    for file, where, code in BLOCK.findall(DOC.read_text()):
        if where.startswith("end-of:"):
            lines = code.splitlines(keepends=True)
            code = "".join(x for x in lines if x.startswith("    ") and x.strip() != "...,")
        blocks.append((file, where, code))
    return blocks


def _renamed(code: str) -> str:
    code = re.sub(r"(?<![.\w])(_?)sinh\b", rf"\g<1>{NEW}", code)  # np.sinh stays the kernel
    return re.sub(r"\bSINH\b", NEW.upper(), code)


def _assigned(node: ast.stmt) -> set[str]:
    """The names a top-level statement assigns (none for anything but an assignment)."""
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _insert(path: Path, where: str, code: str) -> None:
    src = path.read_text()
    kind, name = where.split(":")
    node = next(n for n in ast.parse(src).body if name in _assigned(n))
    lines = src.splitlines(keepends=True)
    if kind == "end-of":
        lines.insert(node.end_lineno - 1, code)
    elif kind == "before":
        lines.insert(node.lineno - 1, code + "\n\n")
    else:
        raise AssertionError(f"unknown place {where!r} in {DOC.name}")
    path.write_text("".join(lines))


def _copy_tree(dst: Path) -> None:
    for name in ("p10", "tpx", "pyproject.toml"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dst / name)
    (dst / "tests").mkdir()
    for entry in (ROOT / "tests").iterdir():
        if entry.is_file():
            shutil.copy(entry, dst / "tests" / entry.name)
        elif entry.name in ("tpx", "backends", "helpers"):
            shutil.copytree(entry, dst / "tests" / entry.name)


def _pytest(tree: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    r = subprocess.run([*cmd, *args], cwd=tree, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def test_the_blocks_are_the_code_of_sinh() -> None:
    blocks = _blocks()
    assert {(f, w) for f, w, _ in blocks} == {
        ("p10/_opspec.py", "end-of:LATER_SPECS"),
        ("tpx/rules.py", "before:RULES"),
        ("tpx/rules.py", "end-of:RULES"),
    }
    for file, _, code in blocks:
        assert code in (ROOT / file).read_text(), f"{DOC.name}: block not in {file}:\n{code}"


@pytest.mark.slow
def test_the_walk_adds_a_working_op(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    for file, where, code in _blocks():
        _insert(tmp_path / file, where, _renamed(code))
    check = (
        "import numpy as np, p10, tpx as tp\n"
        f"x = p10.asarray([0.5, -1.0])\n"
        f"np.testing.assert_allclose(p10.{NEW}(x).numpy(), np.sinh(x.numpy()), rtol=1e-6)\n"
        f"assert '{NEW}' in p10.__all__ and '{NEW}' in tp.__all__\n"
        f"assert p10.Op.{NEW.upper()}.value == '{NEW}'\n"
        f"assert p10.OP_INFO[p10.Op('{NEW}')].arity == 1\n"
        f"y = tp.asarray([0.5], requires_grad=True); tp.{NEW}(y).sum().backward()\n"
        "np.testing.assert_allclose(y.grad.numpy(), np.cosh([0.5]), rtol=1e-6)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    # the rule's finite-difference cases, and the tables' coverage and order
    out = _pytest(tmp_path, "tests/tpx/test_rules.py", "-k", f"{NEW} or every or order")
    assert re.search(r"(\d+) passed", out) and int(re.search(r"(\d+) passed", out)[1]) >= 9, out
    # the kernel cases on the generic Array API backend, compared with NumPy (torch and Dask
    # take the same path; the whole sweep runs in tests/backends)
    out = _pytest(tmp_path, "tests/backends/test_kernels.py", "-k", f"{NEW} and strict or cover")
    assert int(re.search(r"(\d+) passed", out)[1]) >= 3, out
