"""Trace format version 2: node columns stored as runs (``tpx_inspect._node_runs``). The same
traces saved as version 1 and as version 2 load to the same content; the runs keep apart what
JSON tells apart; a run column that does not add up to the node count is refused before
anything of the size it claims is made."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc

import numpy as np
import pytest

import tpx as tp
import tpx_inspect
from tests.helpers.mutations import make_base
from tests.helpers.scripts import train_mlp_steps
from tests.inspect._inspect_graphs import chain_capture, small_capture
from tpx_inspect import TraceFormatError
from tpx_inspect._node_runs import RUN_FIELDS, from_runs, to_runs
from tpx_inspect.tables import NodeTable

EQUAL_IN_PYTHON = [1, 1.0, True, 1, {"a": 1}, {"a": 1.0}, {"a": True}, 0.0, -0.0, 0, False]


@pytest.mark.parametrize(
    "column",
    [
        [], ["op"], ["leaf", "op", "op", "op", "loss"], [None, None, "mul", None],
        [None, 0, 0, 1, 1, 1, None], EQUAL_IN_PYTHON, [[1, 2], (1, 2), [1, 2]],
        np.array(["float32", "float32", "int64"]),
        np.array([{"k": 1}, {"k": 1}, None], dtype=object),
        ["float64"] * 40, ["", "", "".join(["", ""])], ["1"] * 20 + [1], ["a"] * 30 + [None],
    ],
    ids=["empty", "one", "kinds", "ops", "sources", "equal in Python", "lists", "str array",
         "object array", "one string", "equal strings", "string then int",
         "string then None"],
)  # fmt: skip
def test_runs_stand_for_the_column_as_json_writes_it(column):
    runs = to_runs(column)
    back = from_runs(runs["values"], runs["counts"], len(column), "c")
    entries = column.tolist() if isinstance(column, np.ndarray) else list(column)
    assert json.dumps(back) == json.dumps(entries)
    assert all(c >= 1 for c in runs["counts"]) and len(runs["values"]) == len(runs["counts"])
    # NOTE: the round trip above: neighbours JSON tells apart never share a run (1, 1.0 and
    # True are == in Python); here: equal neighbours share one (a tuple is never == a list,
    # so [1, 2] and (1, 2) stay two runs of one JSON text: harmless)
    texts = [json.dumps(v) for v in runs["values"]]
    if not any(isinstance(v, tuple) for v in entries):
        assert all(a != b for a, b in zip(texts, texts[1:]))


def test_equal_neighbours_make_one_run_whether_shared_or_not():
    shared = {"axis": None}
    column = [shared] * 5 + [{"axis": None} for _ in range(5)] + [{"axis": 0}]
    assert to_runs(column)["counts"] == [10, 1]
    assert to_runs(["a"] * 1000 + ["b"])["counts"] == [1000, 1]


@pytest.mark.parametrize("pair", [(1, True), (1, 1.0), (0.0, -0.0), ([1], [True]), ("a", "a")])
def test_long_runs_of_shared_objects_split_where_json_differs(pair):
    """A capture shares one object per template: runs found by identity, and two objects
    that are == in Python but not the same JSON start a new run."""
    a, b = ({"v": x} for x in pair)
    runs = to_runs([a] * 100 + [b] * 100 + [a] * 50)
    same = json.dumps(a) == json.dumps(b)
    assert runs["counts"] == ([250] if same else [100, 100, 50])
    assert json.dumps(from_runs(runs["values"], runs["counts"], 250, "c")) == json.dumps(
        [a] * 100 + [b] * 100 + [a] * 50
    )


@pytest.mark.parametrize(
    ("values", "counts", "message"),
    [
        (["op"], [10**15], "runs cover 1000000000000000 nodes, the structure has 6"),
        (["op", "leaf"], [3, 2], "runs cover 5 nodes, the structure has 6"),
        (["op", "leaf", "x"], [3, 3], "3 values for 2 counts"),
        ([], [], "runs cover 0 nodes"),
    ],
)
def test_runs_that_do_not_cover_the_nodes_are_refused_before_anything_is_made(
    values, counts, message
):
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError, match=message):
            from_runs(values, counts, 6, "kind")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000  # NOTE: nothing of the claimed size


def _with_overrides(trace: tpx_inspect.Trace) -> tpx_inspect.Trace:
    """``trace`` with an ``overrides`` node column (written only when a node has one)."""
    g = trace.graphs[0]
    cols = dict(g.nodes.columns)
    cols["overrides"] = [None] * (len(g.nodes) - 1) + [{"rule": "m:f", "kernel": "m:k"}]
    graph = dataclasses.replace(g, nodes=NodeTable(cols))
    run = dataclasses.replace(trace.runs[0], graphs=(graph, *trace.runs[0].graphs[1:]))
    return dataclasses.replace(trace, runs=(run,))


def _mlp() -> tpx_inspect.Trace:
    with tpx_inspect.capture("first:2", values="small", timing=False) as cap:
        train_mlp_steps(3)
    return cap.trace


def _errored() -> tpx_inspect.Trace:
    w = tp.ones(2, requires_grad=True)
    with pytest.raises(ZeroDivisionError), tpx_inspect.capture("all") as cap:
        for _ in range(3):
            with tp.scope("s"):
                (w * 2).sum().backward()
        _ = 1 / 0
    return cap.trace


TRACES = {
    "small": lambda: small_capture().trace,
    "chain of 300": lambda: chain_capture(300).trace,
    "MLP, stats graphs": _mlp,
    "error, stats graphs": _errored,
    "overrides column": lambda: _with_overrides(small_capture().trace),
}


def _content(trace: tpx_inspect.Trace) -> list:
    out = [trace.meta, trace.plans]
    for g in trace.graphs:
        out += [g.nodes.columns, tuple(g.nodes), list(g.stats), list(g.accumulations), g.order]
        out += [(g.id, g.step, g.kind, g.structure, g.detail, g.roots, g.peak_saved_bytes)]
        for i in range(len(g.nodes)):
            v = g.node_values(i)
            out.append([None if a is None else (a.dtype.str, a.shape, a.tobytes())
                        for a in (v.output, v.grad, *v.inputs)])  # fmt: skip
    return out


@pytest.mark.parametrize("name", sorted(TRACES))
def test_version_1_and_version_2_saves_load_the_same(tmp_path, name):
    trace = TRACES[name]()
    p1, _ = tpx_inspect.save(trace, str(tmp_path / "one.json"), version=1)
    p2, _ = tpx_inspect.save(trace, str(tmp_path / "two.json"))
    one, two = tpx_inspect.load(p1), tpx_inspect.load(p2)
    assert (one.version, two.version) == (1, 2)
    assert _content(one) == _content(two)
    with open(p2, encoding="utf-8") as f:
        nodes = json.load(f)["runs"][0]["structures"][0]["nodes"]
    assert all(set(nodes[k]) == {"values", "counts"} for k in RUN_FIELDS)
    # NOTE: a loaded version 2 trace saved again gives the same bytes (runs written as read)
    p3, _ = tpx_inspect.save(two, str(tmp_path / "two.json"))
    p4, _ = tpx_inspect.save(one, str(tmp_path / "three.json"))
    with open(p3, "rb") as a, open(p4, "rb") as b:
        assert a.read().replace(b"two.npz", b"") == b.read().replace(b"three.npz", b"")


def test_version_2_is_smaller_on_a_long_chain(tmp_path):
    trace = chain_capture(3000).trace
    p1, _ = tpx_inspect.save(trace, str(tmp_path / "one.json"), version=1)
    p2, _ = tpx_inspect.save(trace, str(tmp_path / "two.json"))
    with open(p1, "rb") as a, open(p2, "rb") as b:
        assert len(b.read()) < 0.7 * len(a.read())


def test_a_version_2_run_column_is_checked_as_version_1_checked_its_entries(tmp_path):
    folder = make_base(tmp_path / "base")
    path = folder / "trace.json"
    doc = json.loads(path.read_text())
    doc["runs"][0]["structures"][0]["nodes"]["dtype"]["values"] = ["float7"]
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=r"nodes\.dtype\.values\[0\]: 'float7' does not"):
        tpx_inspect.load(str(path))


def test_an_unknown_writer_version_is_refused():
    with pytest.raises(ValueError, match="cannot write trace format version 3"):
        tpx_inspect.format.to_json(small_capture().trace, version=3)


class _Str(str):
    """A str subclass: written as the same JSON string as its value."""


def test_runs_of_strings_found_by_stretches_are_the_runs_of_the_json():
    """Columns whose runs start with strings or None are cut by comparing whole stretches
    (``_node_runs._gallop``); mixed, short-run and other columns by the per-entry passes:
    either way the runs are those of the entries' JSON texts (random columns)."""
    rng = np.random.default_rng(7)
    pool = ["a", "b", "", None, _Str("a"), "é", 1, True, 1.0, [1], {"k": 1}]
    for _ in range(200):
        n = int(rng.choice([0, 1, 2, 5, 300, 3000]))
        kinds = [pool[i] for i in rng.choice(len(pool), int(rng.integers(1, 4)), replace=False)]
        column: list = []
        while len(column) < n:
            column += [kinds[int(rng.integers(len(kinds)))]] * int(rng.choice([1, 2, 7, 1000]))
        column = column[:n]
        keys = [json.dumps(v) for v in column]
        starts = [i for i in range(n) if i == 0 or keys[i] != keys[i - 1]]
        runs = to_runs(column)
        assert [json.dumps(v) for v in runs["values"]] == [keys[i] for i in starts]
        assert runs["counts"] == [b - a for a, b in zip(starts, [*starts[1:], n])]
