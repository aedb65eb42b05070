"""Every way of writing the sidecar (``save(compress=None)``: each member deflated or stored by
how it deflates; ``True``: all deflated; ``False``: all stored, aligned) loads to the same
content as the trace in memory, on traces of several policies, dtypes, NaN/Inf, 0-d, empty and
large values, a whole capture and one graph of it; ``numpy.load`` reads each sidecar to the
same arrays without pickle; and sidecars written as earlier versions wrote them (every member
deflated by ``zipfile``, or stored unaligned) still load to the same content."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest

import tpx as tp
import tpx_inspect
from tpx_inspect import _json, _sidecar_write, _zip_write
from tpx_inspect.format import TABLES, to_json

MODES = (None, True, False)


def _mixed(values: str):
    """One graph: float32 with NaN/Inf, a 120x120 float64 (a large value), 0-d values, an
    empty (0, 3) value, a bool tensor scaled to float."""
    with tpx_inspect.capture("all", values=values) as cap:
        x = tp.asarray(np.array([1.0, np.nan, np.inf, -2.0], np.float32), requires_grad=True)
        w = tp.asarray(np.random.default_rng(0).standard_normal((120, 120)), requires_grad=True)
        e = tp.asarray(np.zeros((0, 3)), requires_grad=True)
        b = tp.asarray(np.array([True, False])) * 1.5
        y = (x * 2.0).sum() + (w @ w).sum() + (e * 3.0).sum() + (b * x[:2]).sum()
        y.backward()
    return cap.trace


def _steps(values: str, policy: str = "all"):
    """Four steps of a small model (several graphs; the last of another structure, so its
    values follow the others'), the default policy or every step."""
    w = tp.asarray(np.arange(12.0).reshape(3, 4) / 7, requires_grad=True)
    with tpx_inspect.capture(policy, values=values, params={"w": w}) as cap:
        for step in range(4):
            h = tp.asarray(np.ones((2, 3), np.float32)) * (step - 1.0) @ w
            (h.tanh() ** 2 if step < 3 else h.exp()).sum().backward()
    return cap.trace


def _one_graph(trace):
    """The trace of its last graph alone (its values renumbered when saved)."""
    run = trace.runs[0]
    return dataclasses.replace(trace, runs=(dataclasses.replace(run, graphs=run.graphs[-1:]),))


TRACES = {
    "mixed-small": lambda: _mixed("small"),
    "mixed-all": lambda: _mixed("all"),
    "mixed-none": lambda: _mixed("none"),
    "steps-default": lambda: _steps("small", "nonfinite"),
    "steps-all": lambda: _steps("all"),
    "one-graph-of-steps": lambda: _one_graph(_steps("all")),
}


def _content(trace) -> list:
    """What a trace holds, value ids replaced by the values they name."""
    out = []
    for g in trace.graphs:
        tables = {k: getattr(g.tables, k) for k in TABLES}
        ids = tables["summaries"][:, 8].astype(np.int64) if len(tables["summaries"]) else []
        values = [None if i < 0 else g.values.get(int(i)) for i in ids]
        tables["summaries"] = np.delete(tables["summaries"], 8, axis=1)
        out.append((g.id, g.step, g.kind, g.detail, dict(g.nodes.columns), tables, values))
    return out


def _same(a, b) -> None:
    assert len(a) == len(b)
    for (*head_a, nodes_a, tables_a, values_a), (*head_b, nodes_b, tables_b, values_b) in zip(a, b):
        assert head_a == head_b and nodes_a == nodes_b
        for k in TABLES:
            x, y = tables_a[k], tables_b[k]
            assert x.dtype == y.dtype and x.shape == y.shape, k
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), k
        assert len(values_a) == len(values_b)
        for u, v in zip(values_a, values_b):
            assert (u is None) == (v is None)
            if u is not None:
                assert u.dtype == v.dtype and u.shape == v.shape
                assert np.array_equal(u, v, equal_nan=u.dtype.kind == "f")


def _members(path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _rewrite_sidecar(json_path, blob: bytes) -> None:
    (json_path.parent / "trace.npz").write_bytes(blob)
    doc = json.loads(json_path.read_text())
    doc["sidecar"].update(bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest())
    json_path.write_text(json.dumps(doc))


@pytest.mark.parametrize("name", sorted(TRACES))
def test_every_mode_loads_to_the_same_content(tmp_path, name):
    trace = TRACES[name]()
    want = _content(trace)
    arrays = {}
    for mode in MODES:
        path = tmp_path / str(mode) / "trace.json"
        path.parent.mkdir()
        tpx_inspect.save(trace, str(path), compress=mode)
        loaded = tpx_inspect.load(str(path))
        _same(want, _content(loaded))
        arrays[mode] = _members(path.with_suffix(".npz"))
        again = tmp_path / str(mode) / "again.json"
        tpx_inspect.save(loaded, str(again), compress=mode)  # NOTE: a loaded trace re-saved
        assert again.with_suffix(".npz").read_bytes() == path.with_suffix(".npz").read_bytes()
    for mode in MODES:  # NOTE: numpy.load (no pickle) reads the same arrays from each
        assert sorted(arrays[mode]) == sorted(arrays[True])
        for k, a in arrays[True].items():
            b = arrays[mode][k]
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k


def _stored_members(path):
    blob = path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        infos = z.infolist()
    out = {}
    for info in infos:
        name_len, extra_len = struct.unpack("<HH", blob[info.header_offset + 26 :][:4])
        start = info.header_offset + 30 + name_len + extra_len
        out[info.filename] = (info.compress_type, start)
    return out


def test_the_default_stores_float_values_aligned_and_deflates_int_tables(tmp_path):
    trace = _mixed("all")
    path = tmp_path / "trace.json"
    tpx_inspect.save(trace, str(path))
    members = _stored_members(path.with_suffix(".npz"))
    dtypes = list(_members(path.with_suffix(".npz"))["values.dtypes"])
    big = f"values.{dtypes.index('<f8')}.npy"  # NOTE: holds the 120x120 random float64
    method, start = members[big]
    assert method == zipfile.ZIP_STORED and start % _zip_write.ALIGN == 0
    assert members["r0.nodes.npy"][0] == zipfile.ZIP_DEFLATED  # NOTE: small: always deflated
    loaded = tpx_inspect.load(str(path))
    value = next(v for v in loaded.graphs[0].values if v.size > 1000)
    assert value.flags.aligned and not value.flags.writeable
    stored = [m for m, _ in members.values() if m == zipfile.ZIP_STORED]
    everything = tmp_path / "all.json"
    tpx_inspect.save(trace, str(everything), compress=False)
    assert all(
        m == zipfile.ZIP_STORED and s % _zip_write.ALIGN == 0
        for m, s in _stored_members(everything.with_suffix(".npz")).values()
    )
    assert stored and len(stored) < len(members)


def _zipfile_blob(arrays: dict, method: int) -> bytes:
    """An ``.npz`` as ``zipfile`` and ``np.save`` write it (no alignment)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for k in sorted(arrays):
            b = io.BytesIO()
            np.save(b, arrays[k], allow_pickle=False)
            info = zipfile.ZipInfo(f"{k}.npy", (1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, b.getvalue())
    return buf.getvalue()


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_sidecars_of_earlier_writers_still_load(tmp_path, method):
    trace = _steps("all")
    path = tmp_path / "trace.json"
    tpx_inspect.save(trace, str(path), compress=True)
    arrays = _members(path.with_suffix(".npz"))
    for name in {"r0.summaries", "r0.previews", "r0.unkept_previews"} & set(arrays):
        arrays[name] = np.ascontiguousarray(arrays[name])  # NOTE: row-major, as np.save writes
    blob = _zipfile_blob(arrays, method)
    _rewrite_sidecar(path, blob)
    (tmp_path / "check.npz").write_bytes(blob)
    if method == zipfile.ZIP_STORED:  # NOTE: the case holds 8-byte arrays at odd offsets
        assert any(s % 8 for _, s in _stored_members(tmp_path / "check.npz").values())
    loaded = tpx_inspect.load(str(path))
    _same(_content(trace), _content(loaded))
    assert all(v.flags.aligned and not v.flags.writeable for v in loaded.graphs[0].values)


def _saved_json_is_canonical(path) -> None:
    blob = path.read_bytes()
    doc = json.loads(blob)
    side = path.parent / doc["sidecar"]["file"]
    data = side.read_bytes()
    assert doc["sidecar"]["bytes"] == len(data)
    assert doc["sidecar"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert blob == _json.dumps(doc)  # NOTE: the size and hash put in as dumps writes them


def test_the_json_is_written_with_the_sidecar_it_names(tmp_path, monkeypatch):
    """The sidecar is written on a thread while the JSON is made; the JSON's size and hash
    are put in afterwards: the JSON is what dumps writes, with or without a thread."""
    trace = _steps("all")
    path = tmp_path / 'tr "é".json'
    tpx_inspect.save(trace, str(path))
    _saved_json_is_canonical(path)
    first = path.read_bytes()

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(_sidecar_write.threading.Thread, "start", refuse)
    tpx_inspect.save(trace, str(path))
    assert path.read_bytes() == first
    with pytest.raises(FileNotFoundError):  # NOTE: the thread's error, raised to the caller
        tpx_inspect.save(trace, str(tmp_path / "t.json"), sidecar="no/such/folder.npz")
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError):
        tpx_inspect.save(trace, str(tmp_path / "t.json"), sidecar="no/such/folder.npz")
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("thread", [True, False])
def test_a_save_that_fails_after_the_first_members_writes_nothing(tmp_path, monkeypatch, thread):
    """The run tables go to the writer before the values' arrays are made; a failure then
    leaves no sidecar (nor its temporary file) and no JSON, with or without a thread."""
    trace = _steps("all")

    def fail(values, arrays):
        raise MemoryError("planted")

    monkeypatch.setattr("tpx_inspect.format.values_arrays", fail)
    if not thread:
        monkeypatch.setattr(_sidecar_write.threading.Thread, "start", _refuse)
    with pytest.raises(MemoryError, match="planted"):
        tpx_inspect.save(trace, str(tmp_path / "t.json"))
    assert list(tmp_path.iterdir()) == []


def _refuse(self):
    raise RuntimeError("can't start new thread")


def test_the_prefetched_sidecar_is_used_only_when_the_trace_names_it(tmp_path, monkeypatch):
    """load() reads and hashes the usual sidecar (t.json -> t.npz) while it parses the JSON; a
    trace naming another sidecar (a checkpoint's) reads that one, whatever t.npz holds."""
    from tpx_inspect import _sidecar_read

    trace, other = _steps("all"), _steps("small", "nonfinite")
    path = str(tmp_path / "t.json")
    tpx_inspect.save(other, path)  # NOTE: t.npz: another trace's sidecar
    tpx_inspect.save(trace, path, sidecar="named.npz")
    reads = []
    real = _sidecar_read.read_regular
    monkeypatch.setattr(_sidecar_read, "read_regular", lambda p, *a: reads.append(p) or real(p, *a))
    _same(_content(trace), _content(tpx_inspect.load(path)))
    assert sorted(map(os.path.basename, reads)) == ["named.npz", "t.npz"]  # NOTE: t.npz unused
    reads.clear()
    tpx_inspect.save(trace, path)
    _same(_content(trace), _content(tpx_inspect.load(path)))
    assert list(map(os.path.basename, reads)) == ["t.npz"]  # NOTE: read once, on the thread
    monkeypatch.setattr(_sidecar_read.threading.Thread, "start", _refuse)
    _same(_content(trace), _content(tpx_inspect.load(path)))


def test_twelve_runs_are_written_run_tables_first(tmp_path):
    """The writer gets the run tables (but their previews) before the values and writes them
    while the values' arrays are made: with r10 sorting before r2, the sidecar holds those
    tables in sorted order, then the values' arrays (written while the previews are compared),
    then the previews, each in sorted order (the same order on every save), and loads the
    same."""
    trace = _steps("all")
    run = trace.runs[0]
    runs = tuple(
        dataclasses.replace(
            run, id=k, graphs=tuple(dataclasses.replace(g, run=k) for g in run.graphs)
        )
        for k in range(12)
    )
    big = dataclasses.replace(trace, runs=runs)
    path, side = tpx_inspect.save(big, str(tmp_path / "t.json"))
    names = [k[: -len(".npy")] for k in zipfile.ZipFile(side).namelist()]
    first = [k for k in names if k.startswith("r") and not k.endswith("previews")]
    values = [k for k in names if k.startswith("values.")]
    assert values and names == sorted(first) + sorted(values) + sorted(
        set(names) - set(first) - set(values)
    )
    assert sorted(names) == sorted(to_json(big)[1]) and "r10.nodes" in first
    _same(_content(big), _content(tpx_inspect.load(path)))
