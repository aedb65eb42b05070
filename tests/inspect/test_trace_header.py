"""``tpx_inspect.format.read_header``: what a trace says about itself (runs, statuses, graphs,
node counts), read without its node columns or sidecar, equal to what a full load says."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

import tpx as tp
import tpx_inspect
from tpx_inspect import _trace_header, _trace_load
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.format import load, read_header, save


def _chain(n: int, name: str = "capture") -> tpx_inspect.Trace:
    with tpx_inspect.capture("all", values="none", name=name) as cap:
        x = tp.ones(3, requires_grad=True)
        for _ in range(2):
            y = x
            for _ in range(n):
                y = y * 0.999
            y.sum().backward()
    return cap.trace


def _as_loaded(trace):
    """What a full load says, in the header's terms."""
    return [
        (r.id, r.name, r.status, r.steps, r.policy, r.error,
         [(g.id, g.step, g.kind, g.detail, g.structure, len(g.nodes)) for g in r.graphs])
        for r in trace.runs
    ]  # fmt: skip


def _as_header(head):
    return [
        (r.id, r.name, r.status, r.steps, r.policy, r.error,
         [(g.id, g.step, g.kind, g.detail, g.structure, g.nodes) for g in r.graphs])
        for r in head.runs
    ]  # fmt: skip


@pytest.fixture(scope="module", params=[2, 1], ids=["version 2", "version 1"])
def two_runs(tmp_path_factory, request):
    """A trace of two captures (the second one ended by an error) with awkward strings, in
    the current format and in version 1."""
    a, b = _chain(30), _chain(20, name='b "structures": [')
    err = tpx_inspect.records.ErrorInfo("ValueError", 'bad ] { "graphs": [', 'tb \\ "')
    runs = (a.runs[0], dataclasses.replace(b.runs[0], id=1, status="error", error=err))
    trace = dataclasses.replace(a, runs=runs)
    path = str(tmp_path_factory.mktemp("header") / "two.json")
    save(trace, path, version=request.param)
    return path


def test_the_header_says_what_a_full_load_says(two_runs):
    head, trace = read_header(two_runs), load(two_runs)
    assert _as_header(head) == _as_loaded(trace)
    with open(two_runs, encoding="utf-8") as f:
        version = json.load(f)["version"]
    assert (
        head.version == trace.version == version and head.meta == trace.meta and head.modified > 0
    )
    assert head.nodes == sum(len(g.nodes) for g in trace.graphs) and len(head.graphs) == 4


def test_the_header_reads_no_node_column(tmp_path, monkeypatch):
    path = str(tmp_path / "long.json")
    save(_chain(2000), path)  # two graphs of 2,002 nodes (leaf, 2,000 muls, sum)
    parsed = []
    real = _trace_header.parse_json
    monkeypatch.setattr(
        _trace_header, "parse_json", lambda b, p: parsed.append(len(b)) or real(b, p)
    )
    monkeypatch.setattr(_trace_load, "_load_nodes", lambda *a: pytest.fail("nodes were built"))
    size = os.path.getsize(path)
    assert read_header(path).nodes == 4004
    assert len(parsed) == 1 and parsed[0] < size / 50, (parsed, size)


def test_indented_json_and_keys_named_like_the_bulk(two_runs, tmp_path):
    # NOTE: pretty-printed (spaces, newlines), a "structures" key in meta and in a node's
    # params, brackets, quotes and backslashes inside strings: cut exactly the runs' columns
    doc = json.loads(Path(two_runs).read_bytes())
    doc["meta"]["functions"] = {"f": {"path": "m:f", "structures": [1, [2]], "arrays": {}}}
    params = doc["runs"][0]["structures"][0]["nodes"]["params"]
    params = params["values"] if isinstance(params, dict) else params  # NOTE: version 2: runs
    params[-1] = {"structures": ['x\\"]'], "s": '"structures": [', "t": "\\\\", "arrays": "{"}
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(doc, indent=1))
    shutil.copy(two_runs[: -len(".json")] + ".npz", tmp_path / "two.npz")
    assert _as_header(read_header(str(path))) == _as_loaded(load(str(path)))
    cut = _trace_header._without_bulk(path.read_bytes())
    assert cut is not None and b'"s": "\\"structures\\": ["' not in cut
    assert json.loads(cut)["meta"] == doc["meta"]


def test_inline_arrays_are_cut_too(two_runs, tmp_path):
    trace = load(two_runs)
    doc, _ = tpx_inspect.format.to_json(trace, inline=True)
    path = tmp_path / "inline.json"
    path.write_text(json.dumps(doc))
    assert _as_header(read_header(str(path))) == _as_loaded(load(str(path)))
    assert json.loads(_trace_header._without_bulk(path.read_bytes()))["arrays"] == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"format": "tpx_inspect.trace", "version": 1, "ru', "truncated"),
        ('{"format": "other"}', "not a tpx_inspect trace"),
        ('{"format": "tpx_inspect.trace", "version": 9, "meta": {}, "runs": [], "sidecar": null}',
         "version"),
        ('[1, 2', "truncated"),
    ],
)  # fmt: skip
def test_a_bad_header_is_refused_as_load_refuses_it(tmp_path, text, message):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(TraceFormatError, match=message) as ours:
        read_header(str(path))
    with pytest.raises(TraceFormatError) as theirs:
        load(str(path))
    assert str(ours.value) == str(theirs.value)


def test_a_header_field_against_the_schema_is_refused(two_runs, tmp_path):
    doc = json.loads(Path(two_runs).read_bytes())
    doc["runs"][1]["status"] = "finished"
    path = tmp_path / "two.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=r"runs\[1\]\.status"):
        read_header(str(path))


def test_check_sidecar_refuses_a_missing_or_foreign_sidecar_as_load_does(two_runs, tmp_path):
    path = tmp_path / "t.json"
    shutil.copy(two_runs, path)
    assert read_header(str(path)).runs  # the header alone does not look at the sidecar
    for damage in ("missing", "foreign"):
        if damage == "foreign":
            (tmp_path / "two.npz").write_bytes(b"PK not the sidecar of this trace")
        with pytest.raises(TraceFormatError, match="sidecar") as ours:
            read_header(str(path), check_sidecar=True)
        with pytest.raises(TraceFormatError) as theirs:
            load(str(path))
        assert str(ours.value) == str(theirs.value)
    shutil.copy(two_runs[: -len(".json")] + ".npz", tmp_path / "two.npz")  # the name it records
    assert _as_header(read_header(str(path), check_sidecar=True)) == _as_loaded(load(str(path)))
