"""The generated row checkers (``tpx_inspect._schema_rows``) against two references: the
compiled schema's per-value ``why`` (the slow path that names the bad field) and
``jsonschema``, on thousands of randomly damaged rows of every node column and of graphs (the
node columns of format version 1, one entry per node; the structures of version 2, whose
repeating columns are runs)."""

from __future__ import annotations

import copy
import json
import random

import jsonschema
import pytest

import tpx as tp
import tpx_inspect
from tests.fuzz.test_schema_rules import _tolerant
from tpx_inspect._schema import compile_schema
from tpx_inspect._schema_rows import row_checker
from tpx_inspect._trace_load import schema_path
from tpx_inspect.format import to_json

ODD = [True, False, None, -1, 0, 1.5, 2.0, float(2**53), 2**53, "x", "float32", "", [], [1],
       {}, {"a": 1}, [[1]], [True], [None, [], "float32"], [0, [4], "float32", 4]]  # fmt: skip


def _schema(version: int) -> dict:
    with open(schema_path(version), encoding="utf-8") as f:
        return json.load(f)


def _doc(version: int) -> dict:
    x = tp.ones((2, 3), requires_grad=True)

    def step():
        y = (x * 0.5).sin()
        (y @ x.T).relu().sum().backward()

    d, _ = to_json(tpx_inspect.trace(step), inline=True, version=version)
    return json.loads(json.dumps(d))


def _damaged(row, rng: random.Random):
    """``row`` with one item somewhere inside replaced by an odd value, appended or dropped."""
    row = copy.deepcopy(row)
    holders = [row] if isinstance(row, list | dict) else []
    stack = list(holders)
    while stack:
        h = stack.pop()
        for v in h.values() if isinstance(h, dict) else h:
            if isinstance(v, list | dict):
                holders.append(v)
                stack.append(v)
    if not holders or rng.random() < 0.1:
        return copy.deepcopy(rng.choice(ODD))  # the whole row
    h = rng.choice(holders)
    what = rng.random()
    if isinstance(h, list) and (what < 0.15 or not h):
        h.append(copy.deepcopy(rng.choice(ODD)))
    elif isinstance(h, list) and what < 0.3:
        h.pop(rng.randrange(len(h)))
    elif isinstance(h, dict) and (what < 0.3 or not h):
        key = rng.choice([*h, "extra"])
        h[key] = copy.deepcopy(rng.choice(ODD))
    else:
        keys = list(h) if isinstance(h, dict) else range(len(h))
        h[rng.choice(list(keys))] = copy.deepcopy(rng.choice(ODD))
    return row


def _integral_float(x) -> bool:
    # NOTE: JSON Schema counts 2.0 as an integer; the loader never did (stricter on purpose)
    if isinstance(x, float):
        return x == int(x) if abs(x) < 1e300 else False
    items = x.values() if isinstance(x, dict) else x if isinstance(x, list) else ()
    return any(_integral_float(v) for v in items)


CASES = [
    *((1, c) for c in ("inputs", "saved", "shape", "params", "overrides", "graphs", "sources")),
    *((2, c) for c in ("inputs", "saved", "overrides", "graphs", "structures")),
]


@pytest.mark.parametrize(("version", "column"), CASES)
def test_row_checkers_agree_with_the_slow_path_and_jsonschema(version, column):
    schema, doc = _schema(version), _doc(version)
    defs = schema["$defs"]
    run = doc["runs"][0]
    if column == "graphs":
        item, rows = {"$ref": "#/$defs/graph"}, run["graphs"]
    elif column == "structures":  # NOTE: the run columns inside: values and counts damaged
        item, rows = {"$ref": "#/$defs/structure"}, run["structures"]
    elif column == "sources":
        item = defs["structure"]["properties"]["sources"]["items"]
        rows = run["structures"][0]["sources"] or [["f.py", 1, "f"]]
    elif column == "overrides":
        item = defs["nodes"]["properties"]["overrides"]["items"]
        rows = [None, {"rule": "m:f"}, {"kernel": "m:g", "rule": "m:h"}]
    else:
        item, rows = (
            defs["nodes"]["properties"][column]["items"],
            run["structures"][0]["nodes"][column],
        )
    rule = compile_schema({"$defs": defs, **item})
    every = row_checker(
        {"$defs": defs, **item}, defs, lambda s: compile_schema({"$defs": defs, **s})
    )
    # NOTE: keys the schema does not declare are tolerated by the loader (a newer minor)
    reference = jsonschema.Draft202012Validator(_tolerant({"$defs": defs, **item}))
    rng = random.Random(f"{column}{version}")
    assert every(rows) and all(rule.why(r) is None for r in rows)
    refused = 0
    for _ in range(600):
        row = _damaged(rng.choice(rows), rng)
        ours, slow = every([row]), rule.why(row) is None
        assert ours == slow, (row, rule.why(row))
        if not _integral_float(row):
            assert ours == reference.is_valid(row), row
        refused += not ours
        assert every([*rows, row]) == ours and every([row, *rows]) == ours
    assert refused > 50  # NOTE: much of the damage is refused: the test can fail
