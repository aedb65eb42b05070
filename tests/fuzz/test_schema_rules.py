"""The compiled schema (``tpx_inspect._schema``) against the reference validator: on every
JSON-level mutation of the fuzz corpus, it accepts exactly what ``jsonschema`` accepts (with
extra keys allowed, as the loader allows them), and its fast and slow paths agree."""

from __future__ import annotations

import copy
import json
import math

import jsonschema
import pytest

import tpx_inspect
from tests.helpers.mutations import make_base, mutations
from tpx_inspect._schema import MAX_DEPTH, compile_schema

# NOTE: limits the loader adds on top of the schema (depth, string length): jsonschema has none
DEEP = MAX_DEPTH + 1
# and integers written as floats (JSON Schema counts 6.0 as an integer; the loader never did)
BEYOND_THE_SCHEMA = {"params nested 500 deep", "2 MB run name", "a count of 1.0"}


def _no(text):
    raise ValueError(text)


def _tolerant(schema):
    """The schema with ``additionalProperties: false`` dropped everywhere."""
    out = copy.deepcopy(schema)
    stack = [out]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if x.get("additionalProperties") is False:
                del x["additionalProperties"]
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


@pytest.fixture(scope="module", params=[2, 1], ids=["version 2", "version 1"])
def docs(tmp_path_factory, request):
    version = request.param
    base = make_base(tmp_path_factory.mktemp("schema") / "base", version=version)
    out = {}
    for k, m in enumerate(mutations(version)):
        folder = tmp_path_factory.mktemp(f"m{k}")
        for name in ("trace.json", "trace.npz"):
            (folder / name).write_bytes((base / name).read_bytes())
        m.apply(folder)
        if not (folder / "trace.json").is_file():
            continue  # a FIFO: reading it would block
        try:
            doc = json.loads((folder / "trace.json").read_text(), parse_constant=_no)
        except (ValueError, RecursionError, OSError):
            continue  # not a JSON document at all: the parser's case, not the schema's
        if "1e999" not in m.name:  # an infinite float: the loader's parser refuses it
            out[m.name] = doc
    return out


def test_the_compiled_schema_agrees_with_jsonschema(docs):
    version = docs["an extra node column"]["version"]  # NOTE: a mutation that keeps it
    with open(tpx_inspect.schema_path(version), encoding="utf-8") as f:
        schema = json.load(f)
    rule = compile_schema(schema)
    reference = jsonschema.Draft202012Validator(_tolerant(schema))
    assert len(docs) >= 150
    disagree = {}
    for name, doc in docs.items():
        if name in BEYOND_THE_SCHEMA:
            assert not rule.ok(doc)
            continue
        ours, theirs = rule.ok(doc), reference.is_valid(doc)
        if ours != theirs or (rule.why(doc) is None) != ours:
            disagree[name] = (ours, theirs, str(rule.why(doc)))
    assert disagree == {}
    assert sum(not rule.ok(d) for d in docs.values()) > 100


def test_every_keyword_fails_and_passes():
    rule = compile_schema({
        "type": "object", "required": ["a"],
        "properties": {
            "a": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 5}},
            "b": {"enum": ["x", "y"]}, "c": {"const": 1},
            "d": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 2},
                                                   {"oneOf": [{"type": "null"},
                                                              {"type": "number"}]}],
                  "minItems": 2, "maxItems": 2},
            "e": {"type": "string", "pattern": "^[a-z]+$"},
        },
    })  # fmt: skip
    good = {"a": [0, 5], "b": "x", "c": 1, "d": ["ab", None], "e": "abc", "extra": {"k": [1]}}
    assert rule.ok(good) and rule.why(good) is None
    bad = [({"b": "x"}, "the document: the field 'a' is missing"),
           ({"a": [0, 6]}, "a[1]: 6 is more than"),
           ({"a": [True]}, "a[0]: True is not an integer"), ({"a": [], "b": "z"}, "b: 'z' is not"),
           ({"a": [], "c": True}, "c: True is not 1"),
           ({"a": [], "d": ["abc", 1]}, "d[0]: a string"),
           ({"a": [], "d": ["a"]}, "d: a list of 1 items: expected 2"),
           ({"a": [], "d": ["a", "n"]}, "d[1]: 'n' is not a number"),
           ({"a": [], "e": "A"}, "e: 'A' does not match"),
           ({"a": [], "d": ["a", math.inf]}, "d[1]: inf is not a finite number"),
           ({"a": [], "x": json.loads("[" * DEEP + "]" * DEEP)}, "x: nested")]  # fmt: skip
    for doc, message in bad:
        assert not rule.ok(doc)
        assert str(rule.why(doc)).startswith(message), (doc, str(rule.why(doc)))
