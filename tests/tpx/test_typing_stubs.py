"""The names P10 and TPX make at import time (op-spec functions, ``Op`` members, table-installed
``Tensor`` methods) are declared for type checkers by tools/typing_stubs.py, and are current."""

from __future__ import annotations

import ast
from pathlib import Path

import p10
import tpx
from p10._methods import TensorMethods
from tests.helpers.load import load_tool

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    return load_tool("typing_stubs")


def _static_names(path: Path, class_name: str | None = None) -> set[str]:
    """Names bound by the statements of a module (or of one class in it), as a type checker
    reads them: defs, classes, assignments and imports, also under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if class_name is not None:
        tree = next(
            n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name
        )
    return _tool().bound_names(tree)


def test_generated_names_are_current() -> None:
    assert _tool().main(["--check"]) == 0


def test_every_public_name_is_visible_without_running_the_package() -> None:
    for package in (p10, tpx):
        static = _static_names(ROOT / package.__name__ / "__init__.py")
        assert set(package.__all__) - static == set(), package.__name__
    static_ops = _static_names(ROOT / "p10" / "_ops.py", "Op")
    assert {op.name for op in p10.Op} - static_ops == set()
    static_methods = _static_names(ROOT / "p10" / "_methods.py", "TensorMethods")
    runtime = {
        n
        for n, v in vars(TensorMethods).items()
        if (callable(v) or isinstance(v, property)) and n not in vars(object)
    }
    assert runtime - static_methods == set()
    assert {"expm1", "sum", "__add__", "__radd__", "T"} <= static_methods


def test_a_stale_block_is_found(tmp_path: Path) -> None:
    tool = _tool()
    path = tmp_path / "_ops.py"
    text = (ROOT / "p10" / "_ops.py").read_text(encoding="utf-8")
    path.write_text(text.replace('        EXPM1 = "expm1"\n', ""), encoding="utf-8")
    assert tool.updated(path, "", tool.ops_block()) == text
    assert tool.updated(path, "", tool.ops_block()) != path.read_text(encoding="utf-8")
