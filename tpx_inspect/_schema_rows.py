"""Row checkers: Python functions generated from a schema that check a whole list of values
(the rows of a trace's node columns, its graphs) in one loop, with the checks of each row
inlined: no call per row or per nested list, which made the checks 3x slower.

:func:`row_checker` writes the source of ``every(rows) -> bool`` from the schema of one row,
compiles it once (the compiled schema is cached per schema file) and returns it. What the
generator does not inline (a keyword it does not know, an ``anyOf`` other than "null or X", a
long list held by an object: its items are checked by its own compiled rule, whose column
checks run at C speed) calls the compiled :class:`~tpx_inspect._schema.Rule`'s ``ok``, so the
verdicts are those of the compiled schema by construction. Only ``ok`` is generated: the
message of a bad value still comes from ``Rule.why``.

>>> every = row_checker({"type": "array", "prefixItems": [{"type": "integer", "minimum": 0}],
...                      "minItems": 1, "maxItems": 1}, {}, None)
>>> every([[0], [3]]), every([[0], [-1]]), every([[0], [True]])
(True, False, False)
"""

from __future__ import annotations

import builtins
import math
import re
from collections.abc import Callable
from typing import Any

from tpx_inspect._schema_values import MAX_STRING, free_ok

__all__ = ["row_checker"]

_KNOWN = frozenset({
    "$ref", "oneOf", "anyOf", "type", "const", "enum", "properties", "required",
    "additionalProperties", "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum",
    "maxLength", "pattern", "description", "title",
})  # fmt: skip
_BUILTINS = ("type", "len", "list", "dict", "int", "float", "str", "bool")
_SIMPLE = {"null": "{v} is not None", "boolean": "type({v}) is not bool"}
_FAIL = "return False"


def row_checker(
    schema: dict[str, Any], defs: dict[str, Any], compile_rule: Callable[[dict], Any] | None
) -> Callable[[list], bool]:
    """``every(rows)``: whether every item of ``rows`` is valid for ``schema`` (whose
    ``$ref`` s point into ``defs``); ``compile_rule(schema)`` gives the compiled rule of a
    part that is not inlined (None: every part must be inlined)."""
    source = _Source(defs, compile_rule)
    source.check(schema, "v0", 2, (), True)
    # NOTE: builtins and constants bound as default arguments: fast locals, not global lookups
    names = ", ".join(f"{k}={k}" for k in (*_BUILTINS, *source.env))
    loop = ["    for v0 in rows:", *source.lines]
    if source.unpacks:
        # NOTE: a fixed-length list is unpacked without a length test: one of another length
        # raises ValueError (a False here sends the caller to Rule.why, which names it)
        loop = ["    try:", *("    " + line for line in loop), "    except ValueError:",
                f"        {_FAIL}"]  # fmt: skip
    head = [f"def every(rows, *, {names}):", *source.inits]
    text = "\n".join([*head, *loop, "    return True", ""])
    env = {**source.env, **{k: getattr(builtins, k) for k in _BUILTINS}}
    # NOTE: the source is ours: written from the package's own schema file, never from input
    exec(compile(text, "<tpx_inspect row checker>", "exec"), env)
    every = env["every"]
    every.source = text  # NOTE: kept for debugging: print(rule.every.source)
    return every


class _Source:
    """The lines of one generated function and the objects its names refer to."""

    def __init__(self, defs: dict[str, Any], compile_rule: Callable[[dict], Any] | None) -> None:
        self.defs = defs
        self.compile_rule = compile_rule
        self.env: dict[str, Any] = {"free_ok": free_ok, "isfinite": math.isfinite}
        self.inits: list[str] = []
        self.lines: list[str] = []
        self.count = 0
        self.unpacks = False

    def name(self, prefix: str, obj: Any = None) -> str:
        self.count += 1
        key = f"{prefix}{self.count}"
        if obj is not None:
            self.env[key] = obj
        return key

    def put(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def fail_if(self, indent: int, condition: str) -> None:
        self.put(indent, f"if {condition}: {_FAIL}")

    def check(self, s: dict, v: str, ind: int, refs: tuple, in_row: bool) -> None:
        """Lines that return False unless ``v`` is valid for ``s``. ``in_row``: ``v`` is an
        item of a list (short lists inside it are inlined) rather than an object's field."""
        while "$ref" in s:  # NOTE: siblings of $ref are ignored, as the compiler ignores them
            ref = s["$ref"].rsplit("/", 1)[-1]
            if ref in refs:
                return self.delegate(s, v, ind)  # a schema that refers to itself
            refs, s = (*refs, ref), self.defs[ref]
        if "oneOf" in s or "anyOf" in s:
            options = s.get("oneOf") or s.get("anyOf") or []
            if len(options) != 2 or options[0] != {"type": "null"}:
                return self.delegate(s, v, ind)
            self.put(ind, f"if {v} is not None:")
            return self.check(options[1], v, ind + 1, refs, in_row)
        kinds = s.get("type", [])
        kinds = [kinds] if isinstance(kinds, str) else sorted(kinds)
        if set(s) - _KNOWN or not kinds or len(kinds) > 2:
            return self.strings(s, v, ind) if _string_enum(s, kinds) else self.delegate(s, v, ind)
        if len(kinds) == 2:
            if "null" not in kinds or "const" in s or "enum" in s:
                return self.delegate(s, v, ind)
            self.put(ind, f"if {v} is not None:")
            return self.check({**s, "type": kinds[kinds[0] == "null"]}, v, ind + 1, refs, in_row)
        self.one_kind(kinds[0], s, v, ind, refs, in_row)

    def one_kind(self, kind: str, s: dict, v: str, ind: int, refs: tuple, in_row: bool) -> None:
        if kind in _SIMPLE and not {"const", "enum"} & set(s):
            self.fail_if(ind, _SIMPLE[kind].format(v=v))
        elif kind == "integer" and not {"const", "enum"} & set(s):
            self.fail_if(ind, f"type({v}) is not int{_bounds(s, v)}")
        elif kind == "number" and not {"const", "enum"} & set(s):
            self.put(ind, f"if type({v}) is float:")
            self.fail_if(ind + 1, f"not isfinite({v}){_bounds(s, v)}")
            self.put(ind, f"elif type({v}) is not int{_bounds(s, v)}: {_FAIL}")
        elif kind == "string" and ("const" not in s or type(s["const"]) is str):
            self.strings(s, v, ind)
        elif kind == "array" and not {"const", "enum"} & set(s):
            self.array(s, v, ind, refs, in_row)
        elif kind == "object" and not {"const", "enum"} & set(s):
            self.object(s, v, ind, refs)
        else:
            self.delegate(s, v, ind)

    def strings(self, s: dict, v: str, ind: int) -> None:
        self.fail_if(ind, f"type({v}) is not str")
        options = [s["const"]] if "const" in s else s.get("enum")
        if options is not None:  # NOTE: as compiled, an enum or const is all that is checked
            return self.fail_if(ind, f"{v} not in {self.name('E', frozenset(options))}")
        limit, pattern = s.get("maxLength", MAX_STRING), s.get("pattern")
        if pattern is None:
            return self.fail_if(ind, f"len({v}) > {limit}")
        # NOTE: each distinct string is matched once per call: 100,000 dtypes are a few names;
        # one equal to the last good one (most are) is not even hashed: the parser made each
        # string anew, and comparing two short strings is cheaper than hashing one
        seen, last = self.name("seen"), self.name("last")
        self.inits += [f"    {seen} = set()", f"    {last} = None"]
        regex = self.name("P", re.compile(pattern).search)
        self.put(ind, f"if {v} != {last}:")
        self.put(ind + 1, f"if {v} not in {seen}:")
        self.fail_if(ind + 2, f"len({v}) > {limit} or {regex}({v}) is None")
        self.put(ind + 2, f"{seen}.add({v})")
        self.put(ind + 1, f"{last} = {v}")

    def array(self, s: dict, v: str, ind: int, refs: tuple, in_row: bool) -> None:
        lo, hi = s.get("minItems", 0), s.get("maxItems", math.inf)
        prefix, items = s.get("prefixItems", []), s.get("items")
        if not in_row and hi == math.inf:
            return self.delegate(s, v, ind)  # NOTE: a long column: its own rule, at C speed
        self.fail_if(ind, f"type({v}) is not list")
        if prefix and lo == hi == len(prefix):
            names = [self.name("x") for _ in prefix]
            self.put(ind, f"{', '.join(names)}, = {v}")  # NOTE: ValueError unless len(v) == lo
            self.unpacks = True
            for p, x in zip(prefix, names):
                self.check(p, x, ind, refs, True)
            return
        if lo == hi:
            self.fail_if(ind, f"len({v}) != {lo}")
        elif lo or hi != math.inf:
            above = f" or len({v}) > {hi}" if hi != math.inf else ""
            self.fail_if(ind, f"len({v}) < {lo}{above}")
        for i, p in enumerate(prefix):
            x = self.name("x")
            self.put(ind, f"if len({v}) > {i}:")
            self.put(ind + 1, f"{x} = {v}[{i}]")
            self.check(p, x, ind + 1, refs, True)
        if isinstance(items, dict) or not prefix:
            x = self.name("x")
            self.put(ind, f"for {x} in {v}[{len(prefix)}:]:" if prefix else f"for {x} in {v}:")
            if isinstance(items, dict):
                self.check(items, x, ind + 1, refs, True)
            else:  # NOTE: no items schema and no prefix: any bounded JSON value, as compiled
                self.fail_if(ind + 1, f"not free_ok({x})")

    def object(self, s: dict, v: str, ind: int, refs: tuple) -> None:
        props, required = s.get("properties", {}), list(s.get("required", []))
        extra = s.get("additionalProperties")
        self.fail_if(ind, f"type({v}) is not dict")
        if not props and not isinstance(extra, dict):
            # NOTE: an empty object (most params) is fine: no call for it
            return self.fail_if(ind, f"{v} and not free_ok({v})")
        if required:
            self.fail_if(ind, " or ".join(f"{k!r} not in {v}" for k in required))
        for k, p in props.items():
            x = self.name("x")
            if k in required:
                self.put(ind, f"{x} = {v}[{k!r}]")
                self.check(p, x, ind, refs, False)
            else:
                self.put(ind, f"if {k!r} in {v}:")
                self.put(ind + 1, f"{x} = {v}[{k!r}]")
                self.check(p, x, ind + 1, refs, False)
        # NOTE: keys the schema does not declare (a newer minor version): tolerated, bounded
        key, x = self.name("k"), self.name("x")
        self.put(ind, f"if len({v}) > {sum(k in props for k in set(required))}:")
        self.put(ind + 1, f"for {key}, {x} in {v}.items():")
        self.put(ind + 2, f"if {key} not in {self.name('K', frozenset(props))}:")
        if isinstance(extra, dict):
            self.check(extra, x, ind + 3, refs, False)
        else:
            self.fail_if(ind + 3, f"not free_ok({x})")

    def delegate(self, s: dict, v: str, ind: int) -> None:
        if self.compile_rule is None:
            raise ValueError(f"the row checker cannot inline {sorted(s)}")
        self.fail_if(ind, f"not {self.name('R', self.compile_rule(s).ok)}({v})")


def _string_enum(s: dict, kinds: list) -> bool:
    """A schema without a type whose const or enum options are all strings."""
    options = [s["const"]] if "const" in s else s.get("enum")
    if kinds or set(s) - _KNOWN or not options:
        return False
    return all(type(o) is str for o in options)


def _bounds(s: dict, v: str) -> str:
    lo, hi = s.get("minimum", -math.inf), s.get("maximum", math.inf)
    text = f" or {v} < {lo!r}" if lo != -math.inf else ""
    return text + (f" or {v} > {hi!r}" if hi != math.inf else "")
