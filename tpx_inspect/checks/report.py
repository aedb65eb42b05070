"""The results of the checks: findings, one result per check, a report with JSON and rich output.

Every result has one :class:`Status`, derived here and nowhere else: PASS (something was
checked and nothing failed), FAIL, SKIPPED (nothing could be checked; the reasons say why) or
PARTIAL (some items checked, some skipped, the reasons grouped). The CLI tables, ``--json``,
the server's API and the viewer all show these statuses and :meth:`CheckResult.summary` lines.

Exit-code semantics for the CLI: ``Report.exit_code`` is 1 when a check failed, else 0; with
``strict`` a SKIPPED or PARTIAL check exits 1 too (usage errors, 2, are the CLI's own).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np


class Status(StrEnum):
    """The verdict of one check, or of a whole report.

    >>> Status.PARTIAL.value, Status.PARTIAL.label
    ('partial', 'PARTIAL')
    """

    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"
    PARTIAL = "partial"

    @property
    def label(self) -> str:
        """The upper-case word every surface prints."""
        return self.value.upper()


STATUSES = tuple(s.value for s in Status)
"""Every status name, for the server's schema and the viewer."""


@dataclass(frozen=True)
class Skip:
    """An item a check could not check: the node (None for the whole graph) and why.

    Reasons name no node, so that equal reasons group: "3 skipped: <reason>".

    >>> Skip("its input/output values were not recorded", node=4).node
    4
    """

    reason: str
    node: int | None = None


def group_skips(skips: tuple[Skip, ...]) -> list[tuple[str, list[int | None]]]:
    """``(reason, nodes)`` per distinct reason, in first-seen order.

    >>> group_skips((Skip("a", 1), Skip("b", 2), Skip("a", 3)))
    [('a', [1, 3]), ('b', [2])]
    """
    groups: dict[str, list[int | None]] = {}
    for s in skips:
        groups.setdefault(s.reason, []).append(s.node)
    return list(groups.items())


NOTHING_TO_CHECK = "nothing to check in this graph"


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
    """What one check did: how many items it checked or skipped (``skips`` says which and
    why), and what it found.

    >>> CheckResult("order", checked=5).status.label
    'PASS'
    >>> r = CheckResult("local", 2, skipped=1, skips=(Skip("no values", 3),))
    >>> r.status.label, r.summary()
    ('PARTIAL', 'PARTIAL: 2 checked, 1 skipped (1: no values)')
    >>> CheckResult("kernel").summary()
    'SKIPPED: nothing to check in this graph'
    """

    check: str
    checked: int = 0
    findings: tuple[Finding, ...] = ()
    skipped: int = 0
    seconds: float = 0.0
    notes: tuple[str, ...] = ()
    skips: tuple[Skip, ...] = ()

    @property
    def passed(self) -> bool:
        """True when no finding is an error (the check did not fail; see :attr:`status` for
        whether it checked anything)."""
        return not any(f.is_error for f in self.findings)

    @property
    def status(self) -> Status:
        """FAIL on an error finding; else SKIPPED when nothing was checked, PARTIAL when
        something was skipped, PASS otherwise."""
        if not self.passed:
            return Status.FAIL
        if self.checked == 0:
            return Status.SKIPPED
        return Status.PARTIAL if self.skipped or self.skips else Status.PASS

    def reasons(self) -> list[tuple[str, list[int | None]]]:
        """Why items were skipped: ``(reason, nodes)`` grouped by reason; a check that
        checked nothing and gave no reason says :data:`NOTHING_TO_CHECK`."""
        groups = group_skips(self.skips)
        if not groups and self.checked == 0 and self.passed:
            groups = [(NOTHING_TO_CHECK, [])]
        return groups

    def summary(self) -> str:
        """One line, the same in every surface: status, counts and grouped reasons."""
        status = self.status
        if status is Status.SKIPPED:
            return f"SKIPPED: {'; '.join(r for r, _ in self.reasons())}"
        text = f"{status.label}: {self.checked} checked"
        if self.errors:
            text += f", {len(self.errors)} failed"
        if self.skipped or self.skips:
            why = "; ".join(f"{len(nodes)}: {r}" for r, nodes in self.reasons())
            text += f", {self.skipped or len(self.skips)} skipped" + (f" ({why})" if why else "")
        return text

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The findings that make the check fail, in the order the check reports them."""
        return tuple(f for f in self.findings if f.is_error)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``status``, ``summary``, counts, grouped skip ``reasons``."""
        return {
            "check": self.check, "status": self.status.value, "summary": self.summary(),
            "checked": self.checked, "skipped": self.skipped,
            "reasons": [{"reason": r, "count": len(n), "nodes": [i for i in n if i is not None]}
                        for r, n in self.reasons()],
            "seconds": round(self.seconds, 6), "notes": list(self.notes),
            "findings": [f.to_dict() for f in self.findings],
        }  # fmt: skip


@dataclass(frozen=True)
class Report:
    """The results of several checks; ``exit_code`` is 1 when one failed, else 0.

    >>> r = Report((CheckResult("order", 3), CheckResult("rule", 2, (Finding("rule", "bad"),))))
    >>> r.passed, r.exit_code, r.first_failure.message, r.status.label
    (False, 1, 'bad', 'FAIL')
    >>> import json; json.loads(r.to_json())["status"]
    'fail'
    >>> skipped = Report((CheckResult("order", 3), CheckResult("kernel")))
    >>> skipped.status.label, skipped.exit_code, skipped.exit_code_for(strict=True)
    ('PARTIAL', 0, 1)
    """

    results: tuple[CheckResult, ...]
    strict: bool = False

    @property
    def passed(self) -> bool:
        """True when no check failed (see :attr:`status` for whether all checked something)."""
        return all(r.passed for r in self.results)

    @property
    def status(self) -> Status:
        """FAIL when a check failed; PASS when all passed; SKIPPED when none checked
        anything; PARTIAL otherwise."""
        statuses = {r.status for r in self.results}
        if Status.FAIL in statuses:
            return Status.FAIL
        if statuses <= {Status.PASS}:
            return Status.PASS
        return Status.SKIPPED if statuses == {Status.SKIPPED} else Status.PARTIAL

    def exit_code_for(self, strict: bool) -> int:
        """1 when a check failed, or (``strict``) when one was SKIPPED or PARTIAL; else 0."""
        if not self.passed:
            return 1
        return 1 if strict and self.status is not Status.PASS else 0

    @property
    def exit_code(self) -> int:
        """:meth:`exit_code_for` with this report's ``strict``."""
        return self.exit_code_for(self.strict)

    def headline(self) -> str:
        """One line for a status bar: the overall status and which checks made it so.

        >>> Report((CheckResult("order", 3), CheckResult("kernel"))).headline()
        'checks: PARTIAL: 1 pass, 1 skipped (kernel: nothing to check in this graph)'
        """
        by = {s: [r for r in self.results if r.status is s] for s in Status}
        parts = [f"{len(by[Status.PASS])} pass"] if by[Status.PASS] else []
        if by[Status.FAIL]:
            nodes = {f.node for r in by[Status.FAIL] for f in r.errors if f.node is not None}
            names = ", ".join(r.check for r in by[Status.FAIL])
            parts.insert(0, f"{names} failed on {len(nodes)} node(s)")
        for s in (Status.PARTIAL, Status.SKIPPED):
            if by[s]:
                why = "; ".join(f"{r.check}: {', '.join(w for w, _ in r.reasons())}"
                                for r in by[s])  # fmt: skip
                parts.append(f"{len(by[s])} {s.value} ({why})")
        return f"checks: {self.status.label}: " + ", ".join(parts)

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
        """A JSON-ready dict: ``status``, ``failed``, ``exit_code``, ``headline`` and each
        check's result."""
        return {
            "status": self.status.value,
            "failed": not self.passed,
            "exit_code": self.exit_code,
            "headline": self.headline(),
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

    >>> from tpx_inspect.check_view import NodeRecord
    >>> n = NodeRecord(4, "SinBackward", None, {}, (), (), None, scope="enc", source="m.py:3")
    >>> finding_at(n, "rule", "wrong").where
    'SinBackward #4 [enc] at m.py:3'
    """
    op = getattr(node.op, "value", None)
    return Finding(
        category, message, node=node.id, op=op, name=node.name, scope=node.scope,
        source=node.source, severity=severity, details=details,
    )  # fmt: skip
