"""Print the figures issue 12's closing note gives, measured from the code (no number typed in).

Usage (from the repository root)::

    PYTHONPATH=$PWD python tools/code_metrics.py
    PYTHONPATH=$PWD python tools/code_metrics.py --root /tmp/old    # another checkout's files
    PYTHONPATH=$PWD python tools/code_metrics.py --loop tpx/_engine.py:_run_fast \\
        --loop tpx/_engine.py:_run_general                            # an older engine's loops

The figures:

- **backward loop**: the lines of each ``--loop FILE:FUNCTION`` (found by name with ``ast``),
  and of the functions of the same module it calls, directly or through them (its named
  per-node steps; what it calls in other modules is not counted);
- **files over 400 lines** in p10, tpx and tpx_inspect, except the rule table
  (``tpx/rules.py``) and the op-spec table (``p10/_opspec.py``), which may be longer;
- **import cycles** per package, module level and through function-level imports
  (``tools/import_cycles.py``; ``--check --function-level`` lists them);
- **adding an op**: the files and places of the code blocks of docs/adding-an-op.md, which
  ``tests/tpx/test_adding_an_op.py`` applies to a copy of the tree to add a working op;
- **adding a graph check / a trace node field**: where the registries declare one
  (``@register_check`` in the check's module; a field of ``tpx_inspect.nodes.Node``), and every
  other file that names all of the registered ones in quotes: a list kept by hand, or an example
  to update (these two figures read the imported tpx_inspect, not ``--root``).
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterable
from pathlib import Path

from tools import import_cycles

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("p10", "tpx", "tpx_inspect")
LONGER_ALLOWED = ("tpx/rules.py", "p10/_opspec.py")  # the rule table and the op-spec table
LIMIT = 400
LOOP = "tpx/_engine.py:_run"
BLOCK = re.compile(r"```python file=(\S+) at=(\S+)\n(.*?)```", re.S)  # as the walk test reads
TEXT_SUFFIXES = (".py", ".js", ".json", ".md", ".html")


def function_lines(path: Path, name: str) -> tuple[int, dict[str, int]]:
    """Lines of the top-level function ``name`` of ``path``, and of each top-level function of
    the same file that it calls by name, directly or through those (its steps).

    >>> n, steps = function_lines(Path(__file__), "function_lines")
    >>> n > 5, sorted(steps)
    (True, ['_calls', '_length'])
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if name not in defs:
        raise SystemExit(f"{path}: no top-level function {name!r}")
    seen, todo = {name}, [name]
    while todo:
        for callee in _calls(defs[todo.pop()]) & defs.keys() - seen:
            seen.add(callee)
            todo.append(callee)
    steps = {s: _length(defs[s]) for s in sorted(seen - {name})}
    return _length(defs[name]), steps


def _calls(fn: ast.FunctionDef) -> set[str]:
    return {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Name)}  # fmt: skip


def _length(node: ast.stmt) -> int:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return node.end_lineno - first + 1


def long_files(
    root: Path, packages: Iterable[str] = PACKAGES, allowed: Iterable[str] = LONGER_ALLOWED
) -> dict[str, int]:
    """``path -> lines`` of the Python files over :data:`LIMIT` lines in ``packages``."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > LIMIT and rel not in allowed:
                found[rel] = n
    return found


def cycle_counts(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, tuple[int, int]]:
    """``package -> (module-level cycles, cycles with function-level imports too)``."""
    return {
        p: (len(import_cycles.cycles(p, root=root)),
            len(import_cycles.cycles(p, function_level=True, root=root)))
        for p in packages
    }  # fmt: skip


def op_walk(root: Path) -> list[tuple[str, str]] | None:
    """``(file, place)`` of each code block of docs/adding-an-op.md, in page order (None when
    the tree has no such page)."""
    page = root / "docs" / "adding-an-op.md"
    if not page.is_file():
        return None
    return [(f, where) for f, where, _ in BLOCK.findall(_read(page))]


def named_everywhere(root: Path, names: list[str], skip: Iterable[str] = ()) -> dict[str, int]:
    """``path -> lines naming one of them``, for each text file of the tree (tests, docs and
    web included) that names every one of ``names`` in quotes or backticks."""
    quoted = [re.compile(rf"[\"'`]{re.escape(n)}[\"'`]") for n in names]
    found = {}
    for path in _text_files(root):
        rel = path.relative_to(root).as_posix()
        text = _read(path)
        if rel in skip or not all(q.search(text) for q in quoted):
            continue
        found[rel] = sum(any(q.search(line) for q in quoted) for line in text.splitlines())
    return found


def _text_files(root: Path) -> list[Path]:
    tops = [*PACKAGES, "tests", "docs", "web", "tools", "benchmarks", "examples"]
    return sorted(
        p for top in tops for p in (root / top).rglob("*")
        if p.suffix in TEXT_SUFFIXES and p.is_file() and "__pycache__" not in p.parts
    )  # fmt: skip


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _module_file(module: str) -> str:
    return module.replace(".", "/") + ".py"


def check_registry_lines(root: Path) -> list[str]:
    """Where the graph checks are declared, and the files that name all of them."""
    from tpx_inspect.checks import registry

    specs = registry.checks("graph")
    lines = [f"adding a graph check: registered graph checks: {len(specs)}, each declared once "
             "with @register_check in its module:"]  # fmt: skip
    lines += [f"  {s.name}: {_module_file(s.run.__module__)}" for s in specs]
    skip = {_module_file(s.run.__module__) for s in specs}
    lines.append("  files naming every one of them (hand-kept lists, examples, generated docs):")
    named = named_everywhere(root, [s.name for s in specs], skip)
    lines += [f"    {path} ({n} lines)" for path, n in named.items()] or ["    none"]
    return lines


def field_registry_lines(root: Path) -> list[str]:
    """Where the trace node fields are declared, and the files that name all of them."""
    from tpx_inspect.nodes import NODE_COLUMNS_DECLARED

    names = [f.name for f in NODE_COLUMNS_DECLARED]
    lines = [f"adding a trace node field: {len(names)} node columns, declared once as fields of "
             "tpx_inspect.nodes.Node (tpx_inspect/nodes.py):", f"  {', '.join(names)}"]  # fmt: skip
    lines.append("  files naming every one of them (hand-kept lists, examples, generated docs):")
    named = named_everywhere(root, names, {"tpx_inspect/nodes.py"})
    lines += [f"    {path} ({n} lines)" for path, n in named.items()] or ["    none"]
    return lines


def report(root: Path, loops: list[str], registries: bool = True) -> list[str]:
    """Every figure, as the lines :func:`main` prints."""
    lines, total, path = [], 0, {}
    for loop in loops:
        file, _, name = loop.partition(":")
        n, steps = function_lines(root / file, name)
        total += n
        path.update({(file, s): k for s, k in steps.items()})
        lines.append(f"backward loop {file}:{name}: {n} lines; with the {len(steps)} functions "
                     f"of its module it calls (directly or not): {n + sum(steps.values())} "
                     "lines")  # fmt: skip
        lines += [f"  {s}: {k}" for s, k in steps.items()]
    if len(loops) > 1:
        both = total + sum(path.values())
        lines.append(f"backward loops together: {len(loops)} loops, {total} lines; with the "
                     f"functions they call, each once: {both} lines")  # fmt: skip
    long = long_files(root)
    lines.append(f"files over {LIMIT} lines in {', '.join(PACKAGES)} "
                 f"(besides {', '.join(LONGER_ALLOWED)}): {len(long)}")  # fmt: skip
    lines += [f"  {path}: {n}" for path, n in long.items()]
    lines.append("import cycles (module level / with function-level imports), "
                 "listed by `python tools/import_cycles.py --function-level`:")  # fmt: skip
    lines += [f"  {p}: {a} / {b}" for p, (a, b) in cycle_counts(root).items()]
    lines += _walk_lines(op_walk(root))
    if registries:
        lines += check_registry_lines(root) + field_registry_lines(root)
    return lines


def _walk_lines(walk: list[tuple[str, str]] | None) -> list[str]:
    what = "adding an op (docs/adding-an-op.md's walk, tests/tpx/test_adding_an_op.py)"
    if walk is None:
        return [f"{what}: not measured, the tree has no docs/adding-an-op.md"]
    files = sorted({f for f, _ in walk})
    return [f"{what}: {len(files)} files, {len(walk)} places"] + [f"  {f} {w}" for f, w in walk]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--loop", action="append", help=f"FILE:FUNCTION (default {LOOP})")
    parser.add_argument("--no-registries", action="store_true",
                        help="leave out the check and trace-field figures (they read the "
                             "imported tpx_inspect)")  # fmt: skip
    args = parser.parse_args(argv)
    print("\n".join(report(args.root, args.loop or [LOOP], not args.no_registries)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
