"""List the import cycles inside each package of this repository, read from the source (AST).

Usage (from the repository root)::

    python tools/import_cycles.py                 # p10, tpx, tpx_inspect
    python tools/import_cycles.py tpx_inspect     # one package
    python tools/import_cycles.py --check         # exit 1 when a module-level cycle exists
    python tools/import_cycles.py --function-level  # also list cycles through imports in functions
    python tools/import_cycles.py --check --function-level tpx_inspect  # exit 1 on either kind

An edge ``a -> b`` means module ``a`` imports module ``b`` of the same package when ``a`` is
imported: a statement at module level (also inside a module-level ``if``/``try``/class body), but
not under ``if TYPE_CHECKING:``. ``from pkg import name`` points at ``pkg.name`` when that is a
submodule, else at ``pkg`` (its ``__init__``). Imports inside a function run later, when the
function is called, so they cannot fail at import time; they are counted apart
(``--function-level``), since they are often a cycle hidden from the import system.

A cycle is reported as a strongly connected component of the module graph (every module in it
reaches every other), with one shortest cycle through its first module as an example.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("p10", "tpx", "tpx_inspect")


@dataclass
class ModuleGraph:
    """Module-level and function-level import edges between the modules of one package."""

    modules: set[str] = field(default_factory=set)
    top: dict[str, set[str]] = field(default_factory=dict)
    inner: dict[str, set[str]] = field(default_factory=dict)


def module_files(package: str, root: Path = ROOT) -> dict[str, Path]:
    """Every module of ``package`` (dotted name -> file), ``__init__`` as the package's name."""
    out: dict[str, Path] = {}
    base = root / package
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        if all(p.isidentifier() for p in parts):
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
    return name == "TYPE_CHECKING"


def _imports(body: Iterable[ast.stmt], in_function: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """Each import statement of ``body`` with whether it runs only when a function is called."""
    stack = [(stmt, in_function) for stmt in reversed(list(body))]
    while stack:
        stmt, inner = stack.pop()
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            yield stmt, inner
            continue
        if isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
            continue
        nested = isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in reversed(list(ast.iter_child_nodes(stmt))):
            if isinstance(child, ast.stmt):
                stack.append((child, inner or nested))
            elif isinstance(child, ast.excepthandler | ast.match_case):
                stack.extend((s, inner or nested) for s in reversed(child.body))


def _base(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a (possibly relative) ``from ... import`` names."""
    if level == 0:
        return name or ""
    parts = module.split(".")
    if not is_package:
        parts.pop()
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def _targets(stmt: ast.stmt, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that one import statement loads."""
    found: set[str] = set()
    if isinstance(stmt, ast.Import):
        found.update(alias.name for alias in stmt.names)
    elif isinstance(stmt, ast.ImportFrom):
        base = _base(module, is_package, stmt.level, stmt.module)
        for alias in stmt.names:
            sub = f"{base}.{alias.name}"
            found.add(sub if sub in known else base)
    return {t for t in found if t in known and t != module}


def build_graph(package: str, root: Path = ROOT) -> ModuleGraph:
    """Parse every module of ``package`` and collect its import edges inside the package."""
    files = module_files(package, root)
    graph = ModuleGraph(modules=set(files))
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for stmt, inner in _imports(tree.body, in_function=False):
            edges = graph.inner if inner else graph.top
            edges.setdefault(module, set()).update(_targets(stmt, module, is_package, files.keys()))
    return graph


def components(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def shortest_cycle(start: str, members: set[str], edges: dict[str, set[str]]) -> list[str]:
    """One shortest cycle from ``start`` back to itself inside ``members`` (breadth-first)."""
    parent: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges.get(node, ())):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [*reversed(path), start]
            if child not in parent:
                parent[child] = node
                queue.append(child)
    return [start]


def cycles(package: str, function_level: bool = False, root: Path = ROOT) -> list[list[str]]:
    """The import cycles of ``package``: module level only, or with function-level edges too."""
    graph = build_graph(package, root)
    edges = {m: set(graph.top.get(m, ())) for m in graph.modules}
    if function_level:
        for m, targets in graph.inner.items():
            edges[m] |= targets
    return components(graph.modules, edges)


def report(package: str, function_level: bool, root: Path = ROOT) -> tuple[int, list[str]]:
    """Lines describing the cycles of one package, and how many cycles they list (module-level
    ones, plus those through function-level imports with ``function_level``)."""
    graph = build_graph(package, root)
    top = cycles(package, False, root)
    lines = [f"{package}: {len(graph.modules)} modules, {len(top)} module-level cycle(s)"]
    lines += _describe(top, graph.top)
    if function_level:
        both = [c for c in cycles(package, True, root) if c not in top]
        lines.append(f"{package}: {len(both)} more cycle(s) through function-level imports")
        merged = {m: graph.top.get(m, set()) | graph.inner.get(m, set()) for m in graph.modules}
        lines += _describe(both, merged)
        return len(top) + len(both), lines
    return len(top), lines


def _describe(comps: list[list[str]], edges: dict[str, set[str]]) -> list[str]:
    lines = []
    for comp in comps:
        example = shortest_cycle(comp[0], set(comp), edges)
        lines.append(f"  {len(comp)} modules: {', '.join(comp)}")
        lines.append(f"    e.g. {' -> '.join(example)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=list(PACKAGES))
    parser.add_argument(
        "--function-level", action="store_true", help="also list cycles through function imports"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on a cycle listed (module-level; with --function-level, any)",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="the folder holding the packages")
    args = parser.parse_args(argv)
    total = 0
    for package in args.packages:
        count, lines = report(package, args.function_level, args.root)
        total += count
        print("\n".join(lines))
    return 1 if args.check and total else 0


if __name__ == "__main__":
    sys.exit(main())
