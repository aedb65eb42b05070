"""A fast validator for the JSON Schema subset the trace schema uses, compiled once.

The loader checks a whole trace document against ``trace.schema.json`` before it builds
anything, so a 100,000-node document has to be checked in a fraction of a second. Each schema
node compiles into a :class:`Rule`: ``ok(value)``, a quick yes/no (lists of plain scalars are
checked with C-speed set, ``min`` and ``max`` operations, ``_schema_lists``; lists of lists or
objects by a row checker generated from the schema, ``_schema_rows``), and ``why(value)``, run
only on a value that is not ok, which walks down to the first bad field and says what is wrong.
Supported keywords: ``type``, ``const``, ``enum``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``prefixItems``, ``minItems``, ``maxItems``, ``minimum``,
``maximum``, ``maxLength``, ``pattern``, ``oneOf``/``anyOf`` and local ``$ref``.

Keys that the schema does not declare are tolerated (a trace of a newer minor version with
extra optional fields still loads) but, like every free-form value (``params``, ``meta``), they
are bounded in nesting depth and string length, so nothing later recurses without limit.

>>> rule = compile_schema({"type": "array", "items": {"type": "integer", "minimum": 0}})
>>> rule.ok([1, 2]), rule.ok([1, -2])
(True, False)
>>> str(rule.why([1, -2]))
'[1]: -2 is less than the minimum 0'
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tpx_inspect._schema_lists import ANY_TYPE, TYPES, kinds_of, scalar_every
from tpx_inspect._schema_rows import row_checker
from tpx_inspect._schema_values import (
    MAX_DEPTH,
    MAX_STRING,
    QUOTE,
    Problem,
    free_ok,
    free_why,
    quote,
)

__all__ = ["MAX_DEPTH", "MAX_STRING", "QUOTE", "Problem", "Rule", "compile_schema", "quote"]

_CHUNK = 4096


@dataclass(frozen=True)
class Rule:
    """A compiled schema: ``ok`` (fast) and ``why`` (the first problem, None for a good
    value); ``every`` is a fast ``ok`` over a whole list of values, when the schema has one."""

    ok: Callable[[Any], bool]
    why: Callable[[Any], Problem | None]
    every: Callable[[list], bool] | None = None

    def check(self, value: Any) -> Problem | None:
        """None for a valid value, else its first problem."""
        return None if self.ok(value) else self.why(value)


def compile_schema(schema: dict[str, Any]) -> Rule:
    """The :class:`Rule` of ``schema`` (its ``$ref`` s point into its own ``$defs``)."""
    return _Compiler(schema.get("$defs", {})).compile(schema)


_NAMES = {"null": "null", "boolean": "a boolean", "integer": "an integer", "number": "a number",
          "string": "a string", "array": "a list", "object": "an object"}  # fmt: skip


def _no(what: str) -> Callable[[Any], Problem]:
    return lambda v: Problem(what)


class _Compiler:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.refs: dict[str, Rule] = {}

    def compile(self, s: dict[str, Any]) -> Rule:
        if "$ref" in s:
            return self._ref(s["$ref"].rsplit("/", 1)[-1])
        if "oneOf" in s or "anyOf" in s:
            return self._any(s.get("oneOf") or s.get("anyOf") or [])
        kinds = kinds_of(s)
        types = frozenset().union(*(TYPES[k] for k in kinds)) if kinds else ANY_TYPE
        array, obj = self._array(s, kinds), self._object(s, kinds)
        parts = [p for p in (self._value(s), array, obj) if p]
        every = scalar_every(s, kinds, types)
        if kinds in ({"array"}, {"object"}):
            every = self._rows(s)
        return _combine(types, kinds, parts, every)

    def _rows(self, s: dict[str, Any]) -> Callable[[list], bool]:
        """``every`` of a list of lists or objects: a row checker generated from ``s`` on first
        use (``_schema_rows``; most compiled parts never check a list of themselves)."""
        cell: list[Callable[[list], bool]] = []

        def every(v: list) -> bool:
            if not cell:
                cell.append(row_checker(s, self.defs, self.compile))
            return cell[0](v)

        return every

    def _resolve(self, s: dict[str, Any]) -> dict[str, Any]:
        """``s``, or the definition its ``$ref`` names (followed while it is one)."""
        while "$ref" in s:
            s = self.defs[s["$ref"].rsplit("/", 1)[-1]]
        return s

    def _ref(self, name: str) -> Rule:
        if name not in self.refs:
            cell: list[Rule] = []
            # NOTE: a placeholder while the definition compiles (a schema may refer to itself)
            self.refs[name] = Rule(lambda v: cell[0].ok(v), lambda v: cell[0].why(v))
            cell.append(self.compile(self.defs[name]))
            self.refs[name] = cell[0]
        return self.refs[name]

    def _any(self, schemas: list[dict[str, Any]]) -> Rule:
        rules = [self.compile(x) for x in schemas]
        if len(rules) == 2 and schemas[0] == {"type": "null"}:  # the common "null or X"
            other = rules[1]
            every = scalar_every(self._resolve(schemas[1]), nullable=True)
            if every is None and other.every is not None:
                every = lambda v: other.every([x for x in v if x is not None])  # noqa: E731
            return Rule(lambda v: v is None or other.ok(v),
                        lambda v: None if v is None else other.why(v), every)  # fmt: skip
        oks = [r.ok for r in rules]

        def ok(v: Any) -> bool:
            return any(f(v) for f in oks)

        return Rule(ok, lambda v: None if ok(v) else rules[-1].why(v))

    @staticmethod
    def _value(s: dict[str, Any]) -> Rule | None:
        """const, enum, bounds, string length and pattern."""
        if "const" in s or "enum" in s:
            options = [s["const"]] if "const" in s else s["enum"]
            text = " or ".join(map(repr, options))
            return Rule(lambda v: any(_same(v, o) for o in options),
                        lambda v: None if any(_same(v, o) for o in options)
                        else Problem(f"{quote(v)} is not {text}"))  # fmt: skip
        lo, hi = s.get("minimum", -math.inf), s.get("maximum", math.inf)
        limit, pattern = s.get("maxLength", MAX_STRING), s.get("pattern")
        regex = re.compile(pattern) if pattern else None

        def ok(v: Any) -> bool:
            t = type(v)
            if t is int or t is float:
                return lo <= v <= hi and (t is int or math.isfinite(v))
            if t is str:
                return len(v) <= limit and (regex is None or regex.search(v) is not None)
            return True

        def why(v: Any) -> Problem | None:
            if ok(v):
                return None
            if type(v) is str:
                if len(v) > limit:
                    return Problem(f"a string of {len(v)} characters (at most {limit})")
                return Problem(f"{quote(v)} does not match {pattern}")
            if type(v) is float and not math.isfinite(v):
                return Problem(f"{v} is not a finite number")
            edge = f"less than the minimum {lo}" if v < lo else f"more than the maximum {hi}"
            return Problem(f"{quote(v)} is {edge}")

        return Rule(ok, why)

    def _array(self, s: dict[str, Any], kinds: set[str]) -> Rule | None:
        if kinds and "array" not in kinds:
            return None
        lo, hi = s.get("minItems", 0), s.get("maxItems", math.inf)
        prefix = [self.compile(x) for x in s.get("prefixItems", [])]
        items = s.get("items")
        each = self.compile(items) if isinstance(items, dict) else None if prefix else _FREE
        n = len(prefix)

        def rest_ok(v: list) -> bool:
            rest = v[n:] if n else v
            if each is None or not rest:
                return True
            return each.every(rest) if each.every is not None else all(map(each.ok, rest))

        def ok(v: Any) -> bool:
            if type(v) is not list:
                return True
            if not lo <= len(v) <= hi:
                return False
            return all(r.ok(x) for r, x in zip(prefix, v)) and rest_ok(v)

        def why(v: Any) -> Problem | None:
            if type(v) is not list:
                return None
            if not lo <= len(v) <= hi:
                return Problem(f"{quote(v)}: expected {_count(lo, hi)} items")
            for i, (r, x) in enumerate(zip(prefix, v)):
                p = r.why(x)
                if p is not None:
                    return p.at(i)
            if each is None:
                return None
            for start in range(n, len(v), _CHUNK):  # skip good chunks at C speed
                chunk = v[start : start + _CHUNK]
                if _all_ok(each, chunk):
                    continue
                for i, x in enumerate(chunk, start):
                    p = each.why(x)
                    if p is not None:
                        return p.at(i)
            return None

        return Rule(ok, why)

    def _object(self, s: dict[str, Any], kinds: set[str]) -> Rule | None:
        if kinds and "object" not in kinds:
            return None
        props = {k: self.compile(v) for k, v in s.get("properties", {}).items()}
        required = list(s.get("required", []))
        extra = s.get("additionalProperties")
        other = self.compile(extra) if isinstance(extra, dict) else _FREE

        def rule(k: str) -> Rule:
            return props.get(k, other)

        def ok(v: Any) -> bool:
            if type(v) is not dict:
                return True
            if not props and other is _FREE:
                return free_ok(v)
            return all(k in v for k in required) and all(rule(k).ok(x) for k, x in v.items())

        def why(v: Any) -> Problem | None:
            if type(v) is not dict:
                return None
            if not props and other is _FREE:
                return free_why(v)
            for k in required:
                if k not in v:
                    return Problem(f"the field {k!r} is missing")
            for k, x in v.items():
                p = rule(k).why(x)
                if p is not None:
                    return p.at(k)
            return None

        return Rule(ok, why)


def _all_ok(rule: Rule, values: list) -> bool:
    if not values:
        return True
    return rule.every(values) if rule.every is not None else all(map(rule.ok, values))


def _same(a: Any, b: Any) -> bool:
    # NOTE: JSON true is not 1, though Python's True == 1: compare the types too
    return type(a) is type(b) and a == b


def _count(lo: float, hi: float) -> str:
    if lo == hi:
        return str(lo)
    return f"at least {lo}" if hi == math.inf else f"{lo} to {hi}"


def _combine(types: frozenset, kinds: set[str], parts: list[Rule], every: Any) -> Rule:
    oks = [p.ok for p in parts]
    want = " or ".join(_NAMES[k] for k in sorted(kinds))

    def ok(v: Any) -> bool:
        return type(v) in types and all(f(v) for f in oks)

    def why(v: Any) -> Problem | None:
        if type(v) not in types:
            return Problem(f"{quote(v)} is not {want}")
        for part in parts:
            p = part.why(v)
            if p is not None:
                return p
        return None

    if len(oks) == 1:
        only = oks[0]

        def ok(v: Any) -> bool:
            return type(v) in types and only(v)

    return Rule(ok, why, every)


_FREE = Rule(free_ok, free_why)
