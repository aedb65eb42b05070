"""How a save writes its files: ``replace_file`` holds the replaced file open across the
rename on POSIX and closes it on a thread (dropping a large file's pages is then off the
save's path), and does not on other systems (an open file cannot be replaced on Windows);
``compress=None`` chooses each member's method from a sample that the deflated member goes
on from (zlib's stream does not depend on how its input is cut)."""

from __future__ import annotations

import os
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest

from tpx_inspect import _util, _zip_write
from tpx_inspect._sidecar_write import npy_parts


def _recorded(monkeypatch):
    held = []

    def close_soon(fd):
        st = os.fstat(fd)
        held.append((st.st_ino, st.st_nlink, threading.get_ident()))
        os.close(fd)

    monkeypatch.setattr(_util, "_close_soon", close_soon)
    return held


@pytest.mark.skipif(os.name != "posix", reason="POSIX: the replaced file is held open")
def test_the_replaced_file_is_closed_after_the_rename(tmp_path, monkeypatch):
    path = str(tmp_path / "a.npz")
    _util.replace_file(path, b"old" * 1000)
    old = os.stat(path).st_ino
    held = _recorded(monkeypatch)
    _util.replace_file(path, [b"new", memoryview(b"er")])
    assert Path(path).read_bytes() == b"newer"
    # NOTE: the old file, open and already unlinked when its close was handed on
    assert [(ino, links) for ino, links, _ in held] == [(old, 0)]
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_without_holding_the_file_is_replaced_as_before(tmp_path, monkeypatch):
    monkeypatch.setattr(_util, "_HOLD", False)  # NOTE: what Windows does
    held = _recorded(monkeypatch)
    path = str(tmp_path / "a.json")
    _util.replace_file(path, b"one")
    _util.replace_file(path, b"two")
    assert Path(path).read_bytes() == b"two" and held == []


def test_a_new_file_or_a_failed_write_holds_nothing(tmp_path, monkeypatch):
    held = _recorded(monkeypatch)
    path = str(tmp_path / "a.json")
    _util.replace_file(path, b"one")  # NOTE: nothing there before
    with pytest.raises(TypeError):
        _util.replace_file(path, [b"x", 3])  # type: ignore[list-item]
    assert Path(path).read_bytes() == b"one" and held == []
    assert os.listdir(tmp_path) == ["a.json"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX: the replaced file is held open")
def test_the_held_file_is_closed_on_another_thread(tmp_path, monkeypatch):
    path = str(tmp_path / "a")
    open(path, "wb").close()
    fd = _util._held(path)
    assert fd is not None
    closed = []
    real = os.close

    def close(f):
        closed.append((f, threading.get_ident()))
        real(f)

    monkeypatch.setattr(os, "close", close)  # NOTE: the thread's target is looked up here
    _util._close_soon(fd)
    for t in threading.enumerate():
        if t.name == "tpx_inspect close":
            t.join()
    assert [f for f, _ in closed] == [fd] and closed[0][1] != threading.get_ident()


def _member(a):
    return [bytes(b) if i == 0 else b for i, b in enumerate(npy_parts(a))]


@pytest.mark.parametrize(
    "array, deflated",
    [
        (np.zeros(200_000, np.int64), True),  # NOTE: 1.6 MB, past the sample
        (np.arange(40_000, dtype=np.int64) % 7, True),
        (np.random.default_rng(0).standard_normal(100_000), False),
        (np.concatenate([np.zeros(40_000), np.random.default_rng(1).random(60_000)]), True),
        (np.random.default_rng(2).integers(0, 1 << 40, 20_000), False),
        (np.arange(300_000, dtype=np.int64) * 3, False),  # NOTE: ~15%: slow to deflate
    ],
    ids=[
        "zeros",
        "small ints",
        "floats",
        "zeros then floats",
        "wide ints (< sample)",
        "an int table",
    ],
)
def test_a_sampled_member_is_deflated_as_one_stream_or_stored(array, deflated):
    chunks = _member(array)
    data = b"".join(chunks)
    method, stored, crc, size = _zip_write._pack(chunks, None)
    assert (size, crc) == (len(data), zlib.crc32(data))
    assert (method == _zip_write.zipfile.ZIP_DEFLATED) == deflated
    sample = data[: _zip_write._SAMPLE]
    ratio = len(zlib.compress(sample, _zip_write.LEVEL, -15)) / len(sample)
    assert deflated == (ratio <= _zip_write.GOOD)
    if deflated:  # NOTE: the same bytes as deflating the member in one go
        assert b"".join(stored) == zlib.compress(data, _zip_write.LEVEL, -15)
    else:
        assert b"".join(stored) == data
