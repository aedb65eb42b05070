"""The one list of checks: each check registers itself, in its own module, with
:func:`register_check`; the runner, the CLI's ``--only`` choices, the server's check enum, the
finding categories and the table in docs/checks.md are all derived from it.

A graph check is a function ``check(graph, ...) -> CheckResult`` over a recorded
:class:`~tpx_inspect.checks.record.Graph`; a function check is ``check(fn, inputs, ...)``.
Optional keyword parameters named like the fields of :class:`CheckContext` (``opts``,
``progress``, ``client``, ``seed``, ``where``) receive the run's settings.

>>> [spec.name for spec in checks("graph")]
['local', 'accumulation', 'kernel', 'order', 'nonfinite']
>>> spec("order").categories
('order',)
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Subject = Literal["graph", "function"]


@dataclass(frozen=True)
class CheckSpec:
    """One registered check: its name, what it reads, the categories of its findings, where it
    runs in a report (``rank``) and the line the docs table shows."""

    name: str
    subject: Subject
    categories: tuple[str, ...]
    rank: int
    summary: str
    run: Callable[..., Any] = field(compare=False)

    def __call__(self, subject: Any, context: CheckContext, *args: Any) -> Any:
        """Run the check on ``subject`` (a graph, or a function followed by its inputs)."""
        accepted = inspect.signature(self.run).parameters
        options = {k: v for k, v in context.options(self.name).items() if k in accepted}
        return self.run(subject, *args, **options)


@dataclass(frozen=True)
class CheckContext:
    """The settings of one run, handed to each check that takes a parameter of that name."""

    opts: Any = None
    node_progress: Callable[[str, int, int], None] | None = None
    client: Any = None
    seed: int = 0
    where: str | None = None

    def options(self, name: str) -> dict[str, Any]:
        """The keyword arguments on offer to check ``name`` (progress counts its nodes)."""
        progress = self.node_progress
        per_check = None if progress is None else (lambda done, total: progress(name, done, total))
        return {"opts": self.opts, "progress": per_check, "client": self.client,
                "seed": self.seed, "where": self.where}  # fmt: skip


_REGISTRY: dict[str, CheckSpec] = {}
_LOADED = False


def register_check(
    name: str,
    *,
    subject: Subject = "graph",
    categories: tuple[str, ...] | None = None,
    rank: int,
    summary: str,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as check ``name`` (returned unchanged).

    >>> @register_check("doc-example", rank=99, summary="an example", subject="function")
    ... def example(fn, inputs):
    ...     return None
    >>> spec("doc-example").categories
    ('doc-example',)
    >>> unregister_check("doc-example")
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY and _REGISTRY[name].run is not fn:
            raise ValueError(f"register_check: a check named {name!r} is already registered")
        _REGISTRY[name] = CheckSpec(name, subject, categories or (name,), rank, summary, fn)
        return fn

    return decorate


def unregister_check(name: str) -> None:
    """Remove check ``name`` (tests register throw-away checks).

    >>> unregister_check("no-such-check")
    """
    _REGISTRY.pop(name, None)


def _load() -> None:
    # NOTE: every module of this package that registers a check is imported once, so that a
    # check added in a new module needs no second list; the others are not imported (render.py
    # needs the optional rich)
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    package = importlib.import_module("tpx_inspect.checks")
    for info in pkgutil.iter_modules(package.__path__):
        path = Path(package.__path__[0]) / f"{info.name}.py"
        if path.is_file() and "@register_check(" in path.read_text(encoding="utf-8"):
            importlib.import_module(f"tpx_inspect.checks.{info.name}")


def checks(subject: Subject | None = None) -> tuple[CheckSpec, ...]:
    """The registered checks (of one subject), in report order.

    >>> [s.name for s in checks("function")][:1]
    ['gradcheck']
    """
    _load()
    found = [s for s in _REGISTRY.values() if subject is None or s.subject == subject]
    return tuple(sorted(found, key=lambda s: (s.rank, s.name)))


def spec(name: str) -> CheckSpec:
    """The registered check ``name``; a ``ValueError`` naming the known ones otherwise.

    >>> spec("local").subject
    'graph'
    """
    _load()
    if name not in _REGISTRY:
        known = ", ".join(s.name for s in checks())
        raise ValueError(f"unknown check {name!r}; choose from {known}")
    return _REGISTRY[name]


def check_names(subject: Subject | None = None) -> tuple[str, ...]:
    """The names of the registered checks (of one subject), in report order.

    >>> check_names("graph")[0]
    'local'
    """
    return tuple(s.name for s in checks(subject))


def categories() -> tuple[str, ...]:
    """Every category a finding can have, in report order of the checks that make them.

    >>> categories()[:2]
    ('gradcheck', 'rule')
    """
    return tuple(dict.fromkeys(c for s in checks() for c in s.categories))


def docs_table() -> str:
    """The Markdown table of docs/checks.md (a test keeps the file equal to it).

    >>> docs_table().splitlines()[0]
    '| check | category | what it does |'
    """
    rows = ["| check | category | what it does |", "|---|---|---|"]
    for s in checks():
        cats = ", ".join(f"`{c}`" for c in s.categories)
        scope = "" if s.subject == "graph" else "(functions only) "
        rows.append(f"| `{s.name}` | {cats} | {scope}{s.summary} |")
    return "\n".join(rows)
