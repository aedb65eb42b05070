"""Format 2.1: the previews of kept values are derived at load instead of stored
(``tpx_inspect._sidecar_previews``). A saved trace loads to the same previews bit for bit (NaN,
Inf, mixed dtypes, 0-d, empty and unkept values, stats graphs, one graph renumbered); a run
whose stored previews are not what derivation makes is written as in 2.0; the 2.0 and 2.1
readings of one trace agree; a 2.0 reader (no ``derived_previews``) refuses a 2.1 run."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import tpx_inspect
from tests.inspect.test_sidecar_modes import TRACES, _content, _same
from tpx_inspect import _sidecar_previews, _version
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.format import to_json


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _doc(path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("name", sorted(TRACES))
def test_derived_previews_load_bit_for_bit(tmp_path, name):
    trace = TRACES[name]()
    path, side = tpx_inspect.save(trace, str(tmp_path / "t.json"))
    doc, names = _doc(tmp_path / "t.json"), zipfile.ZipFile(side).namelist()
    kept = any(len(g.values) for g in trace.graphs)
    assert doc["runs"][0].get("derived_previews", False) == kept, name
    assert doc.get("minor", 0) == (1 if kept else 0)  # NOTE: a 2.0 trace when nothing derives
    assert ("r0.unkept_previews.npy" in names) == kept and ("r0.previews.npy" in names) != kept
    loaded = tpx_inspect.load(path)
    _same(_content(trace), _content(loaded))
    for g, h in zip(trace.graphs, loaded.graphs, strict=True):
        assert _bits(g.tables.previews) == _bits(h.tables.previews)
    if kept:  # NOTE: stored: the rows of values not kept, in order, and nothing else
        unkept = np.load(side, allow_pickle=False)["r0.unkept_previews"]
        rows = [g.tables.previews[g.tables.summaries[:, 8] < 0] for g in trace.graphs
                if len(g.tables.previews)]  # fmt: skip
        assert _bits(unkept) == _bits(np.concatenate(rows)), name
    tpx_inspect.save(loaded, str(tmp_path / "again.json"))
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "t.npz").read_bytes()


def test_a_preview_that_derivation_does_not_give_is_stored(tmp_path):
    trace = TRACES["steps-all"]()
    k, g = next((k, g) for k, g in enumerate(trace.graphs)
                if len(g.tables.previews) and (g.tables.summaries[:, 8] >= 0).any())  # fmt: skip
    row = int(np.flatnonzero(g.tables.summaries[:, 8] >= 0)[0])
    g.tables.previews.flags.writeable = True
    g.tables.previews[row, 0] += 1.0  # NOTE: planted: no longer the value's first element
    doc, arrays = to_json(trace)
    assert "derived_previews" not in doc["runs"][0] and "r0.previews" in arrays
    assert "minor" not in doc
    path, _ = tpx_inspect.save(trace, str(tmp_path / "t.json"))
    assert _bits(tpx_inspect.load(path).graphs[k].tables.previews) == _bits(g.tables.previews)


def test_the_2_0_and_2_1_writings_of_one_trace_load_the_same(tmp_path, monkeypatch):
    trace = TRACES["mixed-small"]()
    new, _ = tpx_inspect.save(trace, str(tmp_path / "new" / "t.json"))
    monkeypatch.setattr("tpx_inspect.format.drop_derivable", lambda rid, graphs, arrays: False)
    old, _ = tpx_inspect.save(trace, str(tmp_path / "old" / "t.json"))
    assert "minor" not in _doc(tmp_path / "old" / "t.json")
    _same(_content(tpx_inspect.load(old)), _content(tpx_inspect.load(new)))


def test_a_2_0_reader_refuses_a_derived_run(tmp_path):
    """A 2.0 reader does not know ``derived_previews`` (its compiled schema lets unknown keys
    through, as a newer minor may add them) and looks for ``r0.previews``: a clean refusal."""
    path, _ = tpx_inspect.save(TRACES["steps-all"](), str(tmp_path / "t.json"))
    doc = _doc(tmp_path / "t.json")
    assert (doc["version"], doc["minor"]) == _version.FORMAT_VERSION == (2, 1)
    del doc["runs"][0]["derived_previews"]  # NOTE: what a 2.0 reader sees of the run
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=r"lacks array 'r0\.previews'"):
        tpx_inspect.load(path)


def test_hostile_preview_rows_are_refused_before_anything_is_made():
    graphs = [{"rows": {"previews": [0, 3], "summaries": [0, 3]}},
              {"rows": {"previews": [2, 5], "summaries": [3, 6]}}]  # fmt: skip
    with pytest.raises(TraceFormatError, match="do not follow"):
        _sidecar_previews.preview_rows(graphs, 6)
    graphs[1]["rows"]["previews"] = [3, 10**15 + 3]
    with pytest.raises(TraceFormatError, match="do not match its summary rows"):
        _sidecar_previews.preview_rows(graphs, 6)
    graphs[1]["rows"] = {"previews": [3, 6], "summaries": [4, 7]}
    with pytest.raises(TraceFormatError):
        _sidecar_previews.preview_rows(graphs, 6)
    graphs[1]["rows"]["summaries"] = [3, 6]
    assert _sidecar_previews.preview_rows(graphs, 6).tolist() == [0, 1, 2, 3, 4, 5]
    many = [{"rows": {"previews": [3 * k, 3 * k + 3], "summaries": [0, 3]}} for k in range(9)]
    with pytest.raises(TraceFormatError):  # NOTE: 27 preview rows made of 6 summary rows
        _sidecar_previews.preview_rows(many, 6)
    shared = [*graphs, {"rows": {"previews": [0, 3], "summaries": [0, 3]}}]  # NOTE: as graph 0
    assert _sidecar_previews.preview_rows(shared, 6).tolist() == [0, 1, 2, 3, 4, 5]
    shared[-1]["rows"]["summaries"] = [3, 6]  # NOTE: graph 0's preview rows, other summaries
    with pytest.raises(TraceFormatError, match="do not follow"):
        _sidecar_previews.preview_rows(shared, 6)


def test_derive_reads_only_the_preview_elements_of_each_dtype():
    arrays = {
        "values.dtypes": np.array(["<f4", "<i8", "|b1"]),
        "values.0": np.array([1.5, np.nan, -0.0], np.float32),
        "values.1": np.array([2**60 + 1, 7]),
        "values.2": np.array([True, False]),
        # NOTE: rows: (dtype code, offset, size, ndim); the last value is empty, at the end
        "values.index": np.array([[0, 0, 3, 1], [1, 0, 2, 1], [2, 0, 2, 1], [0, 3, 0, 2]]),
    }
    out = _sidecar_previews.derive(np.array([0, 1, 2, 3, 0]), np.array([3, 2, 1, 0, 0]), arrays)
    want = [[1.5, np.nan, -0.0], [float(2**60 + 1), 7.0], [1.0], [], []]
    for row, w in zip(out, want, strict=True):
        assert _bits(row[: len(w)]) == _bits(np.array(w, np.float64))
        assert np.isnan(row[len(w) :]).all()
    with pytest.raises(TraceFormatError, match="more than its value's size"):
        _sidecar_previews.derive(np.array([3]), np.array([1]), arrays)
    with pytest.raises(TraceFormatError, match="no float preview"):
        _sidecar_previews.derive(
            np.array([0]), np.array([1]), {**arrays, "values.0": np.array(["a"] * 3)}
        )
