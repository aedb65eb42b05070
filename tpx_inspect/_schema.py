"""A fast validator for the JSON Schema subset the trace schema uses, compiled once.

The loader checks a whole trace document against ``trace.schema.json`` before it builds
anything, so a 100,000-node document has to be checked in a fraction of a second. Each schema
node compiles into a :class:`Rule`: ``ok(value)``, a quick yes/no (lists of plain scalars are
checked with C-speed set, ``min`` and ``max`` operations), and ``why(value)``, run only on a
value that is not ok, which walks down to the first bad field and says what is wrong.
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
from itertools import chain
from operator import itemgetter
from typing import Any

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
_ROWS = 1024


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


_TYPES: dict[str, frozenset[type]] = {
    "null": frozenset({type(None)}), "boolean": frozenset({bool}), "integer": frozenset({int}),
    "number": frozenset({int, float}), "string": frozenset({str}), "array": frozenset({list}),
    "object": frozenset({dict}),
}  # fmt: skip
_NAMES = {"null": "null", "boolean": "a boolean", "integer": "an integer", "number": "a number",
          "string": "a string", "array": "a list", "object": "an object"}  # fmt: skip
_SCALARS = frozenset({type(None), bool, int, float, str})
_ANY_TYPE = frozenset({*_SCALARS, list, dict})


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
        kinds = _kinds(s)
        types = frozenset().union(*(_TYPES[k] for k in kinds)) if kinds else _ANY_TYPE
        array, obj = self._array(s, kinds), self._object(s, kinds)
        parts = [p for p in (self._value(s), array, obj) if p]
        every = _every(s, kinds, types)
        if kinds in ({"array"}, {"object"}):
            every = (array or obj).every  # type: ignore[union-attr]
        return _combine(types, kinds, parts, every)

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
            every = _every(self._resolve(schemas[1]), nullable=True)
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
        counts = None
        if not n and lo == 0 and hi == math.inf and isinstance(items, dict):
            counts = _counts_every(self._resolve(items))

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

        def every(v: list) -> bool:
            # NOTE: a list of lists is checked column by column (tuples) or flattened (items):
            # a few C-speed passes instead of one Python call per inner list, over slices of
            # _ROWS lists: each pass then finds the objects of the last one in the CPU cache
            # (passes over 200,000 lists took 3-4x longer)
            if len(v) > _ROWS:
                return all(every(v[i : i + _ROWS]) for i in range(0, len(v), _ROWS))
            if not set(map(type, v)) <= {list}:
                return False
            if not v:
                return True
            if n or lo or hi != math.inf:  # NOTE: no pass over the lengths when unbounded
                lengths = set(map(len, v))
                if min(lengths) < lo or max(lengths) > hi:
                    return False
                if n and lengths != {n}:
                    return all(map(ok, v))
            if n:  # NOTE: itemgetter per column, not zip(*v): 100,000 arguments are slow
                return all(_all_ok(r, list(map(itemgetter(i), v))) for i, r in enumerate(prefix))
            if counts is not None:  # lists of counts (shapes): each distinct list once
                return counts(v)
            return each is None or _all_ok(each, list(chain.from_iterable(v)))

        return Rule(ok, why, every)

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

        def every(v: list) -> bool:
            # NOTE: a list of objects (100,000 graphs) is checked field by field, as columns
            if not set(map(type, v)) <= {dict}:
                return False
            if not props and other is _FREE:
                return all(map(free_ok, v))
            for k in set().union(*v):
                column = [d[k] for d in v if k in d]
                if k in required and len(column) != len(v):
                    return False
                if not _all_ok(rule(k), column):
                    return False
            return not v or all(k in v[0] for k in required)  # a key that no object has

        return Rule(ok, why, every)


def _all_ok(rule: Rule, values: list) -> bool:
    if not values:
        return True
    return rule.every(values) if rule.every is not None else all(map(rule.ok, values))


def _kinds(s: dict[str, Any]) -> set[str]:
    t = s.get("type", [])
    return {t} if isinstance(t, str) else set(t)


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


def _every(
    s: dict[str, Any],
    kinds: set[str] | None = None,
    types: frozenset | None = None,
    nullable: bool = False,
) -> Callable[[list], bool] | None:
    """A C-speed check of a whole list of plain scalars (strings, integers, enums), or None;
    ``nullable``: ``None`` items are allowed too (the schema's "null or X")."""
    if kinds is None:
        kinds = _kinds(s)
        types = frozenset().union(*(_TYPES[k] for k in kinds)) if kinds else _ANY_TYPE
    if not kinds and "enum" in s:
        kinds, types = {"string"}, _TYPES["string"]  # an enum of strings (checked below)
    if not kinds or kinds & {"array", "object", "number", "boolean"}:
        return None
    assert types is not None
    if nullable:
        types = types | {type(None)}
    if set(s) - {"type", "minimum", "maximum", "enum", "maxLength", "pattern", "description"}:
        return None
    regex = re.compile(s["pattern"]) if "pattern" in s else None
    lo, hi = s.get("minimum", -math.inf), s.get("maximum", math.inf)
    limit = s.get("maxLength", MAX_STRING)
    allowed = frozenset(s["enum"]) if "enum" in s else None
    if allowed is not None and not all(type(o) is str for o in allowed):
        return None

    bounded = lo != -math.inf or hi != math.inf

    strings = types <= {str, type(None)}

    def every(v: list) -> bool:
        if strings:
            return _strings_ok(v, types, allowed, regex, limit)
        ts = set(map(type, v))
        if not ts <= types:
            return False
        if bounded and int in ts and not _ints_within(v, ts, lo, hi):
            return False
        if str in ts:
            strs = set(v) if ts == {str} else {x for x in v if type(x) is str}
            if allowed is not None and not strs <= allowed:
                return False
            if regex is not None and not all(regex.search(x) for x in strs):
                return False  # NOTE: each distinct string once: 100,000 dtypes are a few names
            return max(map(len, strs)) <= limit
        return True

    return every


_COUNT_LIST = re.compile(r"\[(?:(?:0|[1-9][0-9]*)(?:, (?:0|[1-9][0-9]*))*)?\]")


def _counts_every(s: dict[str, Any]) -> Callable[[list], bool] | None:
    """For items that are integers >= 0 (``count``): a check of a list of such lists (shapes)
    by their distinct ``repr`` s. The repr of a list holding only ints is ``[1, 2]``; any
    other item (a bool, a float, None, a string, a list) spells differently and fails the
    pattern, so the pattern also checks the types; the bounds are then checked per distinct."""
    if s.get("type") != "integer" or set(s) - {"type", "minimum", "maximum", "description"}:
        return None
    lo, hi = s.get("minimum", -math.inf), s.get("maximum", math.inf)
    if lo < 0:
        return None

    def every(v: list) -> bool:
        for text in set(map(repr, v)):
            if _COUNT_LIST.fullmatch(text) is None:
                return False
            if text != "[]" and max(map(int, text[1:-1].split(", "))) > hi:
                return False
        return True

    return every


def _strings_ok(v: list, types: frozenset, allowed: Any, regex: Any, limit: int) -> bool:
    """``every`` of a list of strings (or None): one pass, to the distinct values. Safe for
    types: a string or None equals only a string or None, so each other type keeps one
    representative in the set; an unhashable item (a list) makes the set fail."""
    try:
        distinct = set(v)
    except TypeError:
        return False
    if not set(map(type, distinct)) <= types:
        return False
    strs = distinct - {None}
    if allowed is not None and not strs <= allowed:
        return False
    if regex is not None and not all(regex.search(x) for x in strs):
        return False  # NOTE: each distinct string once: 100,000 dtypes are a few names
    return not strs or max(map(len, strs)) <= limit


def _ints_within(v: list, ts: set, lo: float, hi: float) -> bool:
    """Whether the integers of ``v`` (whose item types are ``ts``) lie in ``[lo, hi]``."""
    if ts == {int}:
        return lo <= min(v) and max(v) <= hi
    if ts == {int, type(None)} and lo <= 0 <= hi:
        # NOTE: filter(None) drops None and 0 (within the bounds): no list is made
        return lo <= min(filter(None, v), default=0) and max(filter(None, v), default=0) <= hi
    ints = [x for x in v if type(x) is int]
    return not ints or (lo <= min(ints) and max(ints) <= hi)


_FREE = Rule(free_ok, free_why)
