"""The column-wise fast paths of the compiled trace schema (``tpx_inspect._schema``): node
columns of many entries are checked per distinct value (strings, shapes by their repr, ids by
their bounds); each bad value planted in one entry is refused as ``jsonschema`` refuses it, and
the message names the entry. On format version 1 documents, whose node columns hold one entry
per node (version 2 keeps the columns of lists ``inputs`` and ``saved`` as they were;
its run columns: tests/inspect/test_node_runs.py)."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

import tpx as tp
import tpx_inspect
from tpx_inspect._schema import compile_schema
from tpx_inspect._trace_load import schema_path
from tpx_inspect.format import to_json


@pytest.fixture(scope="module")
def schema():
    with open(schema_path(1), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def reference(schema):
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def doc():
    x = tp.ones((2, 3), requires_grad=True)

    def step():
        y = x
        for _ in range(40):
            y = (y * 0.5).sin()
        y.sum().backward()

    d, _ = to_json(tpx_inspect.trace(step), inline=True, version=1)
    return json.loads(json.dumps(d))  # plain JSON types, as a parser gives them


def _nodes(d):
    return d["runs"][0]["structures"][0]["nodes"]


BAD = {
    "shape True": lambda n: n["shape"][30].__setitem__(0, True),
    "shape 2.0": lambda n: n["shape"][30].__setitem__(0, 2.0),
    "shape -1": lambda n: n["shape"][30].__setitem__(0, -1),
    "shape 2**53": lambda n: n["shape"][30].__setitem__(0, 2**53),
    "shape None": lambda n: n["shape"][30].__setitem__(0, None),
    "shape '2'": lambda n: n["shape"][30].__setitem__(0, "2"),
    "shape nested": lambda n: n["shape"][30].__setitem__(0, [2]),
    "shape not a list": lambda n: n["shape"].__setitem__(30, "2, 3"),
    "input shape False": lambda n: n["inputs"][30][0][1].__setitem__(0, False),
    "input id -1": lambda n: n["inputs"][30][0].__setitem__(0, -1),
    "input id True": lambda n: n["inputs"][30][0].__setitem__(0, True),
    "input id 1.0": lambda n: n["inputs"][30][0].__setitem__(0, 1.0),
    "input id 2**53": lambda n: n["inputs"][30][0].__setitem__(0, 2**53),
    "input of 2 items": lambda n: n["inputs"][30][0].pop(),
    "input dtype float7": lambda n: n["inputs"][30][0].__setitem__(2, "float7"),
    "input dtype None": lambda n: n["inputs"][30][0].__setitem__(2, None),
    "kind list": lambda n: n["kind"].__setitem__(30, ["op"]),
    "kind None": lambda n: n["kind"].__setitem__(30, None),
    "kind other": lambda n: n["kind"].__setitem__(30, "node"),
    "op 3": lambda n: n["op"].__setitem__(30, 3),
    "op dict": lambda n: n["op"].__setitem__(30, {}),
    "dtype True": lambda n: n["dtype"].__setitem__(30, True),
    "source -1": lambda n: n["source"].__setitem__(30, -1),
    "source True": lambda n: n["source"].__setitem__(30, True),
    "saved bytes -1": lambda n: n["saved"][30][0].__setitem__(3, -1),
    "saved shape 1.5": lambda n: n["saved"][30][0][1].append(1.5),
}


# NOTE: JSON Schema counts 2.0 as an integer; the trace loader never did (a float where an
# id or a size belongs is refused, as before the column-wise checks)
STRICTER = {"shape 2.0", "input id 1.0"}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_entry_is_refused_as_jsonschema_does(schema, reference, doc, name):
    rule = compile_schema(schema)
    assert rule.check(doc) is None and reference.is_valid(doc)
    bad = copy.deepcopy(doc)
    BAD[name](_nodes(bad))
    assert reference.is_valid(bad) is (name in STRICTER)
    problem = rule.check(bad)
    assert problem is not None, name
    assert "[30]" in problem.where and problem.where.startswith("runs[0].structures[0].nodes")


def test_a_column_of_nulls_passes(schema, reference, doc):
    rule = compile_schema(schema)
    good = copy.deepcopy(doc)
    nodes = _nodes(good)
    for edges in nodes["inputs"]:
        for e in edges:
            e[0] = None  # every input without a gradient: a column of nulls
    assert rule.check(good) is None and reference.is_valid(good)


@pytest.mark.parametrize(
    "name", ["shape True", "input id -1", "input of 2 items", "saved bytes -1"]
)
def test_a_bad_entry_past_the_first_slices_is_found(schema, doc, name):
    # NOTE: columns of lists are checked in slices of 1,024 rows: a bad row in a later slice
    big = copy.deepcopy(doc)
    nodes = _nodes(big)
    for k in list(nodes):
        nodes[k] = [copy.deepcopy(x) for x in nodes[k] * 60]  # about 5,000 rows
    rule = compile_schema(schema)
    assert rule.check(big) is None
    row = len(nodes["kind"]) - 30 - len(_nodes(doc)["kind"])  # the last slice but one or two
    shifted = {k: v[row - 30 :] for k, v in nodes.items()}  # BAD plants at row 30 of these
    BAD[name](shifted)
    problem = rule.check(big)
    assert problem is not None and f"[{row}]" in problem.where, (name, row)
