"""Column checks of lists of plain scalars (strings, integers, enums, each maybe null) at C
speed: a few ``set``/``map``/``min``/``max`` passes over the whole list, and each distinct
string matched once. Lists of lists or objects are checked by generated row checkers instead
(``_schema_rows``).

>>> every = scalar_every({"type": "integer", "minimum": 0})
>>> every([0, 5, 7]), every([0, -1]), every([0, True])
(True, False, False)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from tpx_inspect._schema_values import MAX_STRING

__all__ = ["TYPES", "kinds_of", "scalar_every"]

TYPES: dict[str, frozenset[type]] = {
    "null": frozenset({type(None)}), "boolean": frozenset({bool}), "integer": frozenset({int}),
    "number": frozenset({int, float}), "string": frozenset({str}), "array": frozenset({list}),
    "object": frozenset({dict}),
}  # fmt: skip
"""JSON Schema type name -> the Python types a parser gives for it."""
ANY_TYPE = frozenset().union(*TYPES.values())


def kinds_of(s: dict[str, Any]) -> set[str]:
    """The type names a schema allows (empty: any)."""
    t = s.get("type", [])
    return {t} if isinstance(t, str) else set(t)


def scalar_every(
    s: dict[str, Any],
    kinds: set[str] | None = None,
    types: frozenset | None = None,
    nullable: bool = False,
) -> Callable[[list], bool] | None:
    """A C-speed check of a whole list of plain scalars (strings, integers, enums), or None;
    ``nullable``: ``None`` items are allowed too (the schema's "null or X")."""
    if kinds is None:
        kinds = kinds_of(s)
        types = frozenset().union(*(TYPES[k] for k in kinds)) if kinds else ANY_TYPE
    if not kinds and "enum" in s:
        kinds, types = {"string"}, TYPES["string"]  # an enum of strings (checked below)
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
