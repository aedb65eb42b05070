"""tpx_inspect observes TPX through its public observer API only (issue 12).

No import of a private module or name of P10/TPX, no private attribute of their objects, no
stack-frame walking anywhere in tpx_inspect; the scanner itself is shown failing on planted code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tpx as tp
from tpx import observe

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ("p10", "tpx")
FRAME_NAMES = {"_getframe", "f_back", "currentframe", "stack", "f_code", "f_locals"}


def _sources(package: str) -> list[Path]:
    """The package's own modules (not the symlinked web/ and examples/ folders)."""
    base = ROOT / package
    return sorted(p for p in base.rglob("*.py") if not any(q.is_symlink() for q in p.parents))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _assigned_private_attrs(package: str) -> set[str]:
    """Private names a package defines: ``x._a = ...``, class bodies, strings (``__slots__``)."""
    names: set[str] = set()
    for path in _sources(package):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
                    names.update(t.id for t in targets if isinstance(t, ast.Name))
                    if isinstance(stmt, ast.FunctionDef):
                        names.add(stmt.name)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)  # __slots__ entries, setattr names
    return {n for n in names if _private(n)}


def violations(tree: ast.AST, foreign: set[str]) -> list[str]:
    """What in one parsed module reaches into P10/TPX internals (``foreign``: the private
    attribute names P10 and TPX define) or walks stack frames."""
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] in UPSTREAM:
                if any(_private(p) for p in parts):
                    found.append(f"line {line}: from {node.module} import ...")
                found += [f"line {line}: private name {a.name} of {node.module}"
                          for a in node.names if _private(a.name)]  # fmt: skip
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] in UPSTREAM and any(_private(p) for p in parts):
                    found.append(f"line {line}: import {a.name}")
        elif isinstance(node, ast.Attribute):
            receiver = node.value.id if isinstance(node.value, ast.Name) else None
            if receiver in UPSTREAM and _private(node.attr):
                found.append(f"line {line}: {receiver}.{node.attr}")
            elif node.attr in foreign and receiver not in ("self", "cls"):
                found.append(f"line {line}: private attribute .{node.attr}")
            elif node.attr in FRAME_NAMES and receiver in ("sys", "inspect", "frame"):
                found.append(f"line {line}: stack-frame walking ({receiver}.{node.attr})")
            elif node.attr in ("f_back", "f_code", "f_locals"):
                found.append(f"line {line}: stack-frame walking (.{node.attr})")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "getattr", "hasattr", "setattr",
        ):  # fmt: skip
            args = node.args[1:2]
            if args and isinstance(args[0], ast.Constant) and args[0].value in foreign:
                found.append(f"line {line}: {node.func.id}(..., {args[0].value!r})")
    return found


@pytest.fixture(scope="module")
def private_names() -> set[str]:
    return set().union(*(_assigned_private_attrs(p) for p in UPSTREAM))


def test_tpx_inspect_uses_no_private_name_of_tpx_or_p10(private_names):
    bad = {}
    for path in _sources("tpx_inspect"):
        found = violations(ast.parse(path.read_text(encoding="utf-8")), private_names)
        if found:
            bad[str(path.relative_to(ROOT))] = found
    assert bad == {}, "tpx_inspect must use TPX's public observer API (tpx.observe):\n" + "\n".join(
        f"{k}: {v}" for k, v in bad.items()
    )


@pytest.mark.parametrize(
    "code",
    [
        "from tpx._tensor import wrap",
        "from tpx import _engine",
        "import p10._indexing",
        "from p10 import _overrides as o",
        "def f(t):\n    return t._accumulator()",
        "def f(x):\n    return getattr(x, '_value', x)",
        "import sys\ndef f():\n    return sys._getframe(1)",
        "def f(frame):\n    return frame.f_back",
        "import tpx\nx = tpx._engine",
    ],
)
def test_the_scanner_catches_planted_private_access(private_names, code):
    assert violations(ast.parse(code), private_names), code


def test_the_scanner_leaves_public_code_alone(private_names):
    code = "import tpx\nfrom tpx import observe\nclass A:\n    def f(self):\n        return self._t"
    assert violations(ast.parse(code), private_names) == []


def test_backward_start_says_whether_the_pass_is_tpx_grad_and_its_targets():
    seen = []

    class Observer:
        def on_backward_start(self, roots, grad_roots, order, info):
            seen.append(info)

    class OldObserver:  # written for the three-argument event: still called
        def on_backward_start(self, roots, grad_roots, order):
            seen.append("old")

    x = tp.ones(2, requires_grad=True)
    w = tp.ones(2, requires_grad=True)
    with tp.add_observer(Observer()), tp.add_observer(OldObserver()):
        tp.grad((x * w).sum(), [w, x], create_graph=True)
        (x * w).sum().backward()
    grad_info, old1, backward_info, old2 = seen
    assert grad_info.is_grad and grad_info.create_graph
    assert grad_info.targets == (observe.grad_node(w), observe.grad_node(x))
    assert not backward_info.is_grad and backward_info.targets is None
    assert old1 == old2 == "old"


def test_accessors_answer_what_checks_need():
    x = tp.ones(2, requires_grad=True)
    y = x * 2
    assert observe.grad_node(y) is y.grad_fn and not observe.has_pre_hooks(y.grad_fn)
    y.register_hook(lambda g: g)
    assert observe.has_pre_hooks(y.grad_fn)
    assert observe.native(y) is observe.native(observe.p10_tensor(y))
    with pytest.raises(ValueError, match="does not require grad"):
        observe.grad_node(tp.ones(1))
