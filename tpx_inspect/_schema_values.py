"""Where a value breaks the trace schema (:class:`Problem`), how an error message quotes a bad
value, and the bounds on free-form values (``params``, ``meta``, keys the schema does not
declare): nesting depth and string length, checked without recursion.

>>> free_ok({"a": [1, 2.5, "x"]}), free_ok(float("nan"))
(True, False)
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 64
"""Deepest nesting of lists and objects accepted inside a free-form value."""

MAX_STRING = 1 << 20
"""Longest string accepted where the schema gives no ``maxLength`` (characters)."""

QUOTE = 60
"""Most characters of a bad value quoted in an error message."""


class Problem:
    """Where a value breaks the schema (its path, built innermost first) and why."""

    __slots__ = ("parts", "what")

    def __init__(self, what: str) -> None:
        self.parts: list[str] = []
        self.what = what

    def at(self, key: Any) -> Problem:
        """This problem seen one level further out (``key``: an index or a property name)."""
        if isinstance(key, int):
            self.parts.append(f"[{key}]")
        elif key.isidentifier() and len(key) <= 40:
            self.parts.append(f".{key}")
        else:
            self.parts.append(f"[{quote(key, 40)}]")
        return self

    @property
    def where(self) -> str:
        """The path of the bad value, e.g. ``runs[0].graphs[3].step``."""
        return "".join(reversed(self.parts)).lstrip(".") or "the document"

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def quote(value: Any, limit: int = QUOTE) -> str:
    """A short description of ``value`` for an error message (at most ~``limit`` + 25 chars).

    >>> quote("x" * 500)[:6], len(quote("x" * 500)) < 90
    ("'xxxxx", True)
    >>> quote([1, 2, 3]), quote({"a": 1}), quote(10**5000)
    ('a list of 3 items', 'an object of 1 keys', 'a huge integer')
    """
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} keys"
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return repr(value[:limit]) + f"... ({len(value)} chars)"
    if type(value) is int and abs(value) > 10**limit:
        return "a huge integer"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


_SCALARS = frozenset({type(None), bool, int, float, str})


def free_ok(v: Any) -> bool:
    """Any JSON value nested at most :data:`MAX_DEPTH` levels, with bounded strings."""
    t = type(v)
    if not v:
        return t is not float or math.isfinite(v)
    if t is str:
        return len(v) <= MAX_STRING
    if t is float:
        return math.isfinite(v)
    if t is not list and t is not dict:
        return t in _SCALARS
    stack = [(v, 1)]
    while stack:
        x, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        for y in x.values() if type(x) is dict else x:
            ty = type(y)
            if ty is list or ty is dict:
                stack.append((y, depth + 1))
            elif (ty is str and len(y) > MAX_STRING) or (ty is float and not math.isfinite(y)):
                return False
    return True


def free_why(v: Any) -> Problem | None:
    if free_ok(v):
        return None
    if type(v) is str:
        return Problem(f"a string of {len(v)} characters (at most {MAX_STRING})")
    return Problem(f"nested deeper than {MAX_DEPTH} levels, a non-finite number or a string "
                   f"longer than {MAX_STRING} characters")  # fmt: skip
