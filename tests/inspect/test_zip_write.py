"""The sidecar's zip archive, its members deflated on threads at once (``_zip_write``), is
byte for byte what ``zipfile`` writes for the same members, deflated or stored, and a saved
trace's sidecar is what the one-member-after-the-other ``zipfile`` writer made of its
arrays."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

import tpx_inspect
from tests.helpers.mutations import make_base
from tpx_inspect import _zip_write
from tpx_inspect._zip_write import DATE, LEVEL, zip_bytes
from tpx_inspect.format import _npy_bytes, _npz_bytes


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
        ("ones.npy", bytes(_npy_bytes(np.ones((300, 7))))),
        ("random.npy", bytes(_npy_bytes(big))),
        ("column.npy", _npy_bytes(rng.integers(0, 3, (40_000, 3)), fortran=True)),
        ("table.npy", bytes(_npy_bytes(np.zeros(200_000, np.int64)))),
    ]


@pytest.mark.parametrize("compress", [True, False])
def test_the_archive_is_what_zipfile_writes(compress):
    members = _members()
    for some in ([], members[:1], members, members[::-1]):
        assert zip_bytes(iter(some), compress) == _zipfile_bytes(some, compress)
    blob = zip_bytes(members, compress)
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        assert z.testzip() is None
        assert [z.read(n) for n, _ in members] == [bytes(d) for _, d in members]


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


def test_a_saved_sidecar_is_the_one_zipfile_made(tmp_path):
    folder = make_base(tmp_path / "run")
    trace = tpx_inspect.load(str(folder / "trace.json"))
    arrays = tpx_inspect.format.to_json(trace)[1]
    members = [
        (k + ".npy", _npy_bytes(arrays[k], fortran=k.endswith((".summaries", ".previews"))))
        for k in sorted(arrays)
    ]
    assert _npz_bytes(arrays) == _zipfile_bytes(members, True)
    assert _npz_bytes(arrays, False) == _zipfile_bytes(members, False)


def test_without_a_thread_the_members_are_deflated_here(monkeypatch):
    """No thread to be had (interpreter shutdown, the system's limit): the same archive."""
    from concurrent.futures import ThreadPoolExecutor

    def refuse(*args, **kwargs):
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(ThreadPoolExecutor, "submit", refuse)
    members = _members()
    assert zip_bytes(members, True) == _zipfile_bytes(members, True)
