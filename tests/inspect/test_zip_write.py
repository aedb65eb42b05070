"""The sidecar's zip archive (``_zip_write``): deflated (members on threads at once), byte for
byte what ``zipfile`` writes for the same members; stored, the same members as ``zipfile``
and ``numpy.load`` read them, each member's data aligned in the file; a saved trace's sidecar
holds what the one-member-after-the-other ``zipfile`` writer made of its arrays."""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np

import tpx_inspect
from tests.helpers.mutations import make_base
from tpx_inspect import _zip_write
from tpx_inspect._sidecar_write import npy_bytes, npy_parts, npz_bytes
from tpx_inspect._zip_write import ALIGN, DATE, LEVEL, zip_bytes, zip_parts


def _zipfile_bytes(members, compress):
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method, compresslevel=LEVEL) as z:
        for name, data in members:
            info = zipfile.ZipInfo(name, DATE)
            info.compress_type = method
            z.writestr(info, data, compresslevel=LEVEL)
    return buf.getvalue()


def _members():
    rng = np.random.default_rng(0)
    big = rng.standard_normal(50_000).astype(np.float32)  # over _SMALL: deflated on a thread
    return [
        ("empty.npy", b""),
        ("one.npy", b"x"),
        ("ones.npy", bytes(npy_bytes(np.ones((300, 7))))),
        ("random.npy", bytes(npy_bytes(big))),
        ("column.npy", npy_bytes(rng.integers(0, 3, (40_000, 3)), fortran=True)),
        ("table.npy", bytes(npy_bytes(np.zeros(200_000, np.int64)))),
    ]


def _read(blob):
    """The members of an archive as zipfile reads them, and where each one's data starts."""
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        assert z.testzip() is None
        infos = z.infolist()
        datas = [z.read(i) for i in infos]
    starts = []
    for i in infos:
        name_len, extra_len = struct.unpack(
            "<HH", blob[i.header_offset + 26 : i.header_offset + 30]
        )
        starts.append(i.header_offset + 30 + name_len + extra_len)
    return [i.filename for i in infos], datas, starts


def test_a_deflated_archive_is_what_zipfile_writes():
    members = _members()
    for some in ([], members[:1], members, members[::-1]):
        assert zip_bytes(iter(some), True) == _zipfile_bytes(some, True)
    names, datas, _ = _read(zip_bytes(members, True))
    assert names == [n for n, _ in members] and datas == [bytes(d) for _, d in members]


def test_a_stored_archive_holds_the_members_aligned_without_copies():
    members = _members()
    for some in ([], members[:1], members, members[::-1]):
        blob = zip_bytes(iter(some), False)
        names, datas, starts = _read(blob)
        assert names == [n for n, _ in some] and datas == [bytes(d) for _, d in some]
        assert all(s % ALIGN == 0 for s in starts), starts
        assert len(blob) - len(_zipfile_bytes(some, False)) <= (ALIGN + 6) * len(some)
    table = np.arange(100_000.0)
    parts = zip_parts([("t.npy", npy_parts(table))], False)
    assert any(np.shares_memory(np.asarray(p), table) for p in parts if isinstance(p, memoryview))


def test_numpy_loads_a_stored_and_a_deflated_sidecar(tmp_path):
    arrays = {"a.b": np.arange(12.0).reshape(3, 4), "c": np.array(["x", "yz"]), "d": np.int8(3)}
    for compress in (False, True):
        path = tmp_path / f"s{compress}.npz"
        path.write_bytes(npz_bytes(arrays, compress))
        with np.load(path, allow_pickle=False) as z:
            assert sorted(z.files) == sorted(arrays)
            for k, a in arrays.items():
                assert z[k].dtype == a.dtype and np.array_equal(z[k], a)


def test_an_archive_past_zip64_limits_goes_to_zipfile(monkeypatch):
    """Past the limits (2 GiB, lowered here) the archive is zipfile's, ZIP64 records and all."""
    members = _members()
    monkeypatch.setattr(_zip_write, "_LIMIT", 1000)
    written = []
    real = _zip_write._by_zipfile
    monkeypatch.setattr(_zip_write, "_by_zipfile", lambda *a: written.append(a) or real(*a))
    for compress in (True, False):
        assert zip_bytes(members, compress) == _zipfile_bytes(members, compress)
    assert len(written) == 2
    assert zip_bytes([("t.npy", [b"ab", np.arange(600, dtype=np.int16)])], False) == (
        _zipfile_bytes([("t.npy", b"ab" + np.arange(600, dtype=np.int16).tobytes())], False)
    )


def test_a_saved_sidecar_is_the_one_zipfile_made(tmp_path):
    folder = make_base(tmp_path / "run")
    trace = tpx_inspect.load(str(folder / "trace.json"))
    arrays = tpx_inspect.format.to_json(trace)[1]
    members = [
        (k + ".npy", npy_bytes(arrays[k], fortran=k.endswith((".summaries", ".previews"))))
        for k in sorted(arrays)
    ]
    assert npz_bytes(arrays, True) == _zipfile_bytes(members, True)
    assert _read(npz_bytes(arrays, False))[1] == [bytes(d) for _, d in members]


def test_without_a_thread_the_members_are_deflated_here(monkeypatch):
    """No thread to be had (interpreter shutdown, the system's limit): the same archive."""
    from concurrent.futures import ThreadPoolExecutor

    def refuse(*args, **kwargs):
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(ThreadPoolExecutor, "submit", refuse)
    members = _members()
    assert zip_bytes(members, True) == _zipfile_bytes(members, True)
