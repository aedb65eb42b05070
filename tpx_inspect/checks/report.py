"""The results of the checks: findings, one result per check, a report with JSON and rich output.

Exit-code semantics for the CLI: ``Report.exit_code`` is 0 when every check passed and 1 when
one failed (usage errors, 2, are the CLI's own).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CATEGORIES = (
    "gradcheck",
    "rule",
    "accumulation",
    "kernel",
    "tracing",
    "replay",
    "order",
    "nonfinite-forward",
    "nonfinite-backward",
)
"""Every category a finding can have, one per kind of bug the checks name."""


@dataclass(frozen=True)
class Finding:
    """One problem, attributed to a node (``node`` id, op, scope, source line) and a category.

    >>> f = Finding("rule", "sin: VJP disagrees", node=3, op="sin")
    >>> f.is_error, f.where
    (True, 'sin #3')
    """

    category: str
    message: str
    node: int | None = None
    op: str | None = None
    name: str | None = None
    scope: str = ""
    source: str = ""
    severity: str = "error"
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        """True unless the finding is only a warning or a note."""
        return self.severity == "error"

    @property
    def where(self) -> str:
        """``op #id`` plus scope and source line when known."""
        text = f"{self.name or self.op or 'node'} #{self.node}" if self.node is not None else "-"
        if self.scope:
            text += f" [{self.scope}]"
        if self.source:
            text += f" at {self.source}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "category": self.category, "severity": self.severity, "message": self.message,
            "node": self.node, "op": self.op, "name": self.name, "scope": self.scope,
            "source": self.source, "details": _jsonable(dict(self.details)),
        }  # fmt: skip


@dataclass(frozen=True)
class CheckResult:
    """What one check did: how many items it checked or skipped, and what it found.

    >>> CheckResult("order", checked=5).passed
    True
    """

    check: str
    checked: int = 0
    findings: tuple[Finding, ...] = ()
    skipped: int = 0
    seconds: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when no finding is an error."""
        return not any(f.is_error for f in self.findings)

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The findings that make the check fail, in the order the check reports them."""
        return tuple(f for f in self.findings if f.is_error)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "check": self.check, "passed": self.passed, "checked": self.checked,
            "skipped": self.skipped, "seconds": round(self.seconds, 6), "notes": list(self.notes),
            "findings": [f.to_dict() for f in self.findings],
        }  # fmt: skip


@dataclass(frozen=True)
class Report:
    """The results of several checks; ``exit_code`` is 0 when all passed, 1 otherwise.

    >>> r = Report((CheckResult("order", 3), CheckResult("rule", 2, (Finding("rule", "bad"),))))
    >>> r.passed, r.exit_code, r.first_failure.message
    (False, 1, 'bad')
    >>> import json; json.loads(r.to_json())["passed"]
    False
    """

    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(r.passed for r in self.results)

    @property
    def exit_code(self) -> int:
        """0 when every check passed, 1 when one failed."""
        return 0 if self.passed else 1

    @property
    def failures(self) -> tuple[Finding, ...]:
        """Every error finding, check by check."""
        return tuple(f for r in self.results for f in r.errors)

    @property
    def first_failure(self) -> Finding | None:
        """The first error finding that names a node (per-node checks list theirs in backward
        order), else the first error finding; None when every check passed."""
        fails = self.failures
        located = [f for f in fails if f.node is not None]
        return (located or list(fails) or [None])[0]

    def result(self, check: str) -> CheckResult:
        """The result of the check named ``check``."""
        for r in self.results:
            if r.check == check:
                return r
        raise KeyError(f"no result for check {check!r}; have {[r.check for r in self.results]}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``passed``, ``exit_code`` and each check's result."""
        return {
            "passed": self.passed,
            "exit_code": self.exit_code,
            "checks": [r.to_dict() for r in self.results],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """Deterministic JSON of :meth:`to_dict` (sorted keys), for ``--json`` and CI."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    def render(self, console: Any = None) -> None:
        """Print a summary table and one table of findings per failing check with rich.

        >>> import io
        >>> from rich.console import Console
        >>> console = Console(file=io.StringIO(), width=80)
        >>> Report((CheckResult("order", 3),)).render(console)
        >>> "PASS" in console.file.getvalue()
        True
        """
        from tpx_inspect.checks.render import render_report

        render_report(self, console)


def _jsonable(value: Any) -> Any:
    """Plain JSON values from NumPy scalars/arrays, tuples and dicts."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def finding_at(
    node: Any, category: str, message: str, *, severity: str = "error", **details: Any
) -> Finding:
    """A :class:`Finding` attributed to a recorded node (anything with id/op/name/scope/source).

    >>> from tpx_inspect.checks.record import NodeRecord
    >>> n = NodeRecord(4, "SinBackward", None, {}, (), (), None, scope="enc", source="m.py:3")
    >>> finding_at(n, "rule", "wrong").where
    'SinBackward #4 [enc] at m.py:3'
    """
    op = getattr(node.op, "value", None)
    return Finding(
        category, message, node=node.id, op=op, name=node.name, scope=node.scope,
        source=node.source, severity=severity, details=details,
    )  # fmt: skip
