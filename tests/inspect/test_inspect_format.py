"""The trace format: round trip, golden JSON, JSON Schema, rejection of damaged files."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile

import jsonschema
import numpy as np
import pytest

import tpx as tp
import tpx_inspect
from tests.inspect._inspect_graphs import small_capture
from tpx_inspect import TraceFormatError
from tpx_inspect.format import from_json, to_json

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
UPDATE = os.environ.get("TPX_UPDATE_GOLDEN") == "1"


def golden(name: str, text: str) -> None:
    """Compare ``text`` with golden file ``name`` (rewrite it with TPX_UPDATE_GOLDEN=1)."""
    path = os.path.join(GOLDEN, name)
    if UPDATE:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    with open(path, encoding="utf-8") as f:
        assert text == f.read(), f"{name} changed; rerun with TPX_UPDATE_GOLDEN=1 if intended"


def rounded(x):
    """JSON with floats rounded to 6 significant digits (golden files across platforms)."""
    if isinstance(x, float):
        return float(f"{x:.6g}")
    if isinstance(x, list):
        return [rounded(v) for v in x]
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    return x


def schema(version: int = tpx_inspect.format.VERSION):
    with open(tpx_inspect.schema_path(version), encoding="utf-8") as f:
        return json.load(f)


def validate(doc) -> None:
    jsonschema.validate(doc, schema(doc["version"]), cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("version", [1, 2])
def test_the_schema_is_a_valid_json_schema(version):
    jsonschema.Draft202012Validator.check_schema(schema(version))
    assert schema(version)["properties"]["version"]["const"] == version


def test_round_trip_keeps_every_record(tmp_path):
    trace = small_capture().trace
    path = str(tmp_path / "t.json")
    json_path, side = tpx_inspect.save(trace, path)
    assert side == str(tmp_path / "t.npz") and os.path.exists(side)
    back = tpx_inspect.load(json_path)
    assert back.version == trace.version and back.meta == trace.meta
    a, b = trace.graphs[0], back.graphs[0]
    assert tuple(a.nodes) == tuple(b.nodes)
    assert list(a.stats) == list(b.stats)
    assert list(a.accumulations) == list(b.accumulations)
    assert (a.order, a.roots, a.peak_saved_bytes) == (b.order, b.roots, b.peak_saved_bytes)
    for i in range(len(a.nodes)):
        va, vb = a.node_values(i), b.node_values(i)
        for x, y in zip([va.output, va.grad, *va.inputs], [vb.output, vb.grad, *vb.inputs]):
            assert (x is None and y is None) or np.array_equal(x, y)


def test_round_trip_of_stats_graphs_and_errors(tmp_path):
    w = tp.ones(2, requires_grad=True)
    path = str(tmp_path / "e.json")
    with pytest.raises(ZeroDivisionError), tpx_inspect.capture("all", path=path):
        for _ in range(3):
            (w * 2).sum().backward()
        _ = 1 / 0
    t = tpx_inspect.load(path)
    assert [g.detail for g in t.graphs] == ["full", "stats", "stats"]
    assert t.graphs[2].grad(0).norm == pytest.approx(2 * np.sqrt(2))
    assert t.run().error.type == "ZeroDivisionError"
    with open(path, encoding="utf-8") as f:
        validate(json.load(f))


def test_saving_is_deterministic(tmp_path):
    p1, s1 = tpx_inspect.save(small_capture().trace, str(tmp_path / "a" / "t.json"))
    p2, s2 = tpx_inspect.save(small_capture().trace, str(tmp_path / "b" / "t.json"))
    for x, y in ((p1, p2), (s1, s2)):
        with open(x, "rb") as f, open(y, "rb") as g:
            assert f.read() == g.read()


GOLDEN_WRITTEN = {1: "small_trace.json", 2: "small_trace_v2_1.json"}
"""What ``to_json(version=...)`` writes now, by major version."""
GOLDEN_TRACES = {
    "1": "small_trace.json",
    "2.0": "small_trace_v2.json",
    "2.1": "small_trace_v2_1.json",
}
"""Stored files of every format version (2.0: written before format 2.1 existed)."""


@pytest.mark.parametrize("version", [1, 2])
def test_golden_trace_json_validates_against_the_schema(version):
    """Version 1 is still written as before (its golden file unchanged since format 2)."""
    doc, _ = to_json(small_capture().trace, inline=True, version=version)
    assert doc["version"] == version
    validate(doc)
    text = json.dumps(rounded(doc), indent=1, sort_keys=True) + "\n"
    golden(GOLDEN_WRITTEN[version], text)


def test_the_golden_traces_of_every_version_load_the_same():
    """The stored version 1, 2.0 and 2.1 files (2.1: the previews of kept values derived)."""
    loaded = {}
    for version, name in GOLDEN_TRACES.items():
        with open(os.path.join(GOLDEN, name), encoding="utf-8") as f:
            doc = json.load(f)
        assert (
            "derived_previews" in doc["runs"][0] if version == "2.1" else doc.get("minor") is None
        )
        loaded[version] = from_json(doc)
    one = loaded["1"]
    for two in (loaded["2.0"], loaded["2.1"]):
        assert (one.version, two.version) == (1, 2)
        assert (one.meta, one.plans) == (two.meta, two.plans)
        for a, b in zip(one.graphs, two.graphs, strict=True):
            assert a.nodes.columns == b.nodes.columns and tuple(a.nodes) == tuple(b.nodes)
            assert a.order == b.order and a.roots == b.roots
            assert a.tables.summaries.tobytes() == b.tables.summaries.tobytes()
            # NOTE: golden files round floats to 6 digits: a float32 value rounded so is not
            # the float64 preview rounded so; a saved trace derives them bit for bit
            np.testing.assert_allclose(a.tables.previews, b.tables.previews, rtol=1e-6)
            assert two is loaded["2.1"] or list(a.stats) == list(b.stats)


def test_inline_json_round_trip():
    trace = small_capture().trace
    doc, arrays = to_json(trace, inline=True)
    assert arrays == {}
    back = from_json(json.loads(json.dumps(doc)))
    assert list(back.graphs[0].stats) == list(trace.graphs[0].stats)


def test_schema_rejects_a_broken_document():
    doc, _ = to_json(small_capture().trace, inline=True)
    doc["runs"][0]["graphs"][0]["kind"] = "sideways"
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)


@pytest.fixture
def saved(tmp_path):
    return tpx_inspect.save(small_capture().trace, str(tmp_path / "t.json"))


def test_truncated_json_is_rejected(saved):
    path, _ = saved
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[: len(text) // 2])
    with pytest.raises(TraceFormatError, match="truncated trace JSON"):
        tpx_inspect.load(path)


def test_corrupt_json_is_rejected(saved):
    path, _ = saved
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"format": "tpx_inspect.trace", oops}')
    with pytest.raises(TraceFormatError, match="corrupt trace JSON"):
        tpx_inspect.load(path)


def test_not_a_trace_and_missing_file(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("[1, 2]")
    with pytest.raises(TraceFormatError, match="not a tpx_inspect trace"):
        tpx_inspect.load(str(p))
    with pytest.raises(TraceFormatError, match="no such trace file"):
        tpx_inspect.load(str(tmp_path / "nope.json"))
    assert issubclass(TraceFormatError, ValueError)


def _edit(path, fn):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    fn(doc)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


def test_unknown_version_is_rejected(saved):
    path, _ = saved
    _edit(path, lambda d: d.update(version=99))
    with pytest.raises(TraceFormatError, match="version 99 is not supported"):
        tpx_inspect.load(path)


def test_missing_sidecar_is_rejected(saved):
    path, side = saved
    os.remove(side)
    with pytest.raises(TraceFormatError, match=r"sidecar .* is missing"):
        tpx_inspect.load(path)


def test_truncated_sidecar_is_rejected(saved):
    path, side = saved
    with open(side, "rb") as f:
        blob = f.read()
    with open(side, "wb") as f:
        f.write(blob[:-100])
    with pytest.raises(TraceFormatError, match="does not match its trace"):
        tpx_inspect.load(path)


def _replace_sidecar(path, side, arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    blob = buf.getvalue()
    with open(side, "wb") as f:
        f.write(blob)
    import hashlib

    _edit(
        path,
        lambda d: d["sidecar"].update(bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest()),
    )


def test_a_sidecar_holding_pickles_is_rejected(saved):
    path, side = saved
    with np.load(side) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["r0.nodes"] = np.array([object()], dtype=object)
    _replace_sidecar(path, side, arrays)
    with pytest.raises(TraceFormatError, match="corrupt sidecar"):
        tpx_inspect.load(path)


def test_a_sidecar_that_is_not_a_zip_is_rejected(saved):
    path, side = saved
    blob = b"not a zip at all"
    with open(side, "wb") as f:
        f.write(blob)
    import hashlib

    _edit(
        path,
        lambda d: d["sidecar"].update(bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest()),
    )
    with pytest.raises(TraceFormatError, match="corrupt sidecar"):
        tpx_inspect.load(path)


def test_broken_topological_order_is_rejected(saved):
    path, _ = saved

    def break_order(doc):
        doc["runs"][0]["structures"][0]["nodes"]["inputs"][1][1][0] = 4

    _edit(path, break_order)
    with pytest.raises(TraceFormatError, match="breaks topological order"):
        tpx_inspect.load(path)


def test_out_of_range_rows_are_rejected(saved):
    path, _ = saved
    _edit(path, lambda d: d["runs"][0]["graphs"][0]["rows"].update(nodes=[0, 999]))
    with pytest.raises(TraceFormatError, match="out of range"):
        tpx_inspect.load(path)


def test_a_malformed_run_names_the_problem(saved):
    path, _ = saved
    _edit(path, lambda d: d["runs"][0].pop("graphs"))
    with pytest.raises(TraceFormatError, match=r"runs\[0\]: the field 'graphs' is missing"):
        tpx_inspect.load(path)


def test_the_npz_members_carry_a_fixed_timestamp(saved):
    _, side = saved
    with zipfile.ZipFile(side) as z:
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_a_trace_of_one_graph_saves_only_its_values(tmp_path):
    with tpx_inspect.capture("all") as cap:
        for k in range(3):
            w = tp.ones(k + 2, requires_grad=True)  # a new shape: a new structure, kept in full
            (w * float(k)).exp().sum().backward()
    trace = cap.trace
    assert [g.detail for g in trace.graphs] == ["full", "full", "full"]
    run = dataclasses.replace(trace.run(), graphs=(trace.graphs[1],))
    one = dataclasses.replace(trace, runs=(run,))
    _, arrays = to_json(one)
    _, all_arrays = to_json(trace)
    assert 0 < len(arrays["values.index"]) < len(all_arrays["values.index"])
    path, _ = tpx_inspect.save(one, str(tmp_path / "one.json"))
    g = tpx_inspect.load(path).graphs[0]
    np.testing.assert_allclose(g.node_values(1).output, np.ones(3))
    np.testing.assert_allclose(g.node_values(2).output, np.full(3, np.e), rtol=1e-6)


def test_exported_graph_json_is_self_contained(tmp_path):
    """`tpx-inspect export --format json` and the server's JSON export write one file that
    loads without a sidecar, with the graph's statistics and values."""
    import json

    import tpx as tp
    import tpx_inspect
    from tpx_inspect.outputs import graph_json

    x = tp.ones((2, 3), requires_grad=True)
    t = tpx_inspect.trace(lambda: (x.exp() * 2).sum().backward())
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(graph_json(t, t.graphs[0])))
    assert not (tmp_path / "graph.npz").exists()
    g = tpx_inspect.load(str(path)).graphs[0]
    assert [n.title for n in g.nodes] == [n.title for n in t.graphs[0].nodes]
    assert g.grad(0).shape == (2, 3) and g.grad(0).norm == t.graphs[0].grad(0).norm
