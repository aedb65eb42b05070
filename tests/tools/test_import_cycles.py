"""tools/import_cycles.py finds planted cycles, tells module-level from function-level imports."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.load import load_tool

import_cycles = load_tool("import_cycles")


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_finds_a_module_level_cycle_and_names_its_modules(tmp_path: Path) -> None:
    _package(tmp_path, {
        "__init__.py": "from pkg import a\n",
        "a.py": "from pkg.b import f\n",
        "b.py": "from . import c\n",
        "c.py": "import pkg.a\n",
        "d.py": "from pkg import a\n",
    })  # fmt: skip
    assert import_cycles.cycles("pkg", root=tmp_path) == [["pkg.a", "pkg.b", "pkg.c"]]
    count, lines = import_cycles.report("pkg", False, root=tmp_path)
    assert count == 1
    assert "e.g. pkg.a -> pkg.b -> pkg.c -> pkg.a" in [line.strip() for line in lines]


def test_function_level_and_type_checking_imports_are_apart(tmp_path: Path) -> None:
    _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\n",
        "b.py": "def f():\n    from pkg import a\n    return a\n",
        "c.py": "try:\n    from pkg import d\nexcept ImportError:\n    pass\n",
        "d.py": "class K:\n    from pkg import c\n",
    })  # fmt: skip
    assert import_cycles.cycles("pkg", root=tmp_path) == [["pkg.c", "pkg.d"]]
    graph = import_cycles.build_graph("pkg", root=tmp_path)
    assert graph.inner["pkg.b"] == {"pkg.a"} and not graph.top.get("pkg.a")


def test_check_exits_1_on_the_cycles_it_lists(tmp_path: Path) -> None:
    _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "def f():\n    from pkg import a\n    return a\n",
    })  # fmt: skip
    root = ["--root", str(tmp_path), "pkg"]
    assert import_cycles.main(["--check", *root]) == 0  # a cycle through a function only
    assert import_cycles.main(["--check", "--function-level", *root]) == 1
    (tmp_path / "pkg" / "b.py").write_text("from pkg import a\n")
    assert import_cycles.main(["--check", *root]) == 1


def test_a_long_chain_is_walked_without_recursion(tmp_path: Path) -> None:
    n = 3000
    files = {f"m{i}.py": f"from pkg import m{(i + 1) % n}\n" for i in range(n)}
    _package(tmp_path, {"__init__.py": "", **files})
    [comp] = import_cycles.cycles("pkg", root=tmp_path)
    assert len(comp) == n


def test_tpx_inspect_has_no_import_cycle_not_even_through_function_imports():
    assert import_cycles.cycles("tpx_inspect", function_level=True) == []
    assert import_cycles.main(["--check", "--function-level", "tpx_inspect"]) == 0
