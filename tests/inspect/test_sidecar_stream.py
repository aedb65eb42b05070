"""The save's faster paths against the plain ones: the sidecar written as it is made
(``_zip_write.zip_stream``, ``_sidecar_write``: members written while the caller makes the
next ones, the archive that needs ZIP64 records written again whole), the value arrays and
the derived previews equal to their per-value construction."""

from __future__ import annotations

import glob
import hashlib
import io
import json
import random
import time
import zipfile

import numpy as np

import tpx as tp
import tpx_inspect
from tpx_inspect import _zip_write
from tpx_inspect import format as fmt
from tpx_inspect._node_runs import to_runs
from tpx_inspect._sidecar_previews import derive
from tpx_inspect._sidecar_write import npy_bytes, values_arrays
from tpx_inspect.format import to_json
from tpx_inspect.summary import PREVIEW


def _trace(n: int = 60):
    """An n-op (4, 4) chain captured by default (``values="small"``: ~3 values a node)."""
    x = tp.asarray(np.arange(16.0).reshape(4, 4) / 16, requires_grad=True)
    with tpx_inspect.capture(values="small") as cap:
        y = x
        for _ in range(n):
            y = y * 0.999
        y.sum().backward()
    return cap.trace


def test_run_tables_are_written_while_the_values_are_made(tmp_path, monkeypatch):
    """By the time the kept values' arrays are made, the thread has written the run tables
    (all but their previews) to the sidecar's temporary file: the write no longer waits for
    the whole archive (tables larger than the file's write buffer)."""
    trace = _trace(3000)
    side = tmp_path / "t.npz"
    seen: list[int] = []
    real = fmt.values_arrays

    def slow(values, arrays):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not seen:  # NOTE: the thread writes on its own
            seen.extend(p for p in glob.glob(f"{side}.tmp-*") if _tables_in(p))
            time.sleep(0.01)
        return real(values, arrays)

    monkeypatch.setattr(fmt, "values_arrays", slow)
    path, _ = tpx_inspect.save(trace, str(tmp_path / "t.json"))
    assert seen, "nothing was written before the values' arrays were made"
    with zipfile.ZipFile(side) as z:
        names = z.namelist()
    assert names.index("r0.summaries.npy") < names.index("values.0.npy")
    _same_arrays(trace, tpx_inspect.load(path))


def _tables_in(tmp: str) -> bool:
    """Whether the partly written archive ``tmp`` already holds the run's summaries."""
    with open(tmp, "rb") as f:
        return b"r0.summaries.npy" in f.read()


def _same_arrays(a, b) -> None:
    left, right = to_json(a)[1], to_json(b)[1]
    assert sorted(left) == sorted(right)
    for k in left:
        assert left[k].dtype == right[k].dtype and left[k].tobytes() == right[k].tobytes(), k


def test_a_sidecar_needing_zip64_is_written_again_whole(tmp_path, monkeypatch):
    """Past the ZIP64 limits (lowered here) after some members were written: the file is the
    archive zipfile writes, and the JSON gives its size and hash."""
    trace = _trace()
    arrays = to_json(trace)[1]
    monkeypatch.setattr(_zip_write, "_LIMIT", sum(a.nbytes for a in arrays.values()) // 2)
    path, side = tpx_inspect.save(trace, str(tmp_path / "t.json"), compress=False)
    with open(side, "rb") as f:
        blob = f.read()
    with open(path, "rb") as f:
        doc = json.loads(f.read())
    assert doc["sidecar"]["bytes"] == len(blob)
    assert doc["sidecar"]["sha256"] == hashlib.sha256(blob).hexdigest()
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        names = z.namelist()
        whole = io.BytesIO()
        with zipfile.ZipFile(whole, "w") as again:
            for name in names:
                info = zipfile.ZipInfo(name, _zip_write.DATE)
                again.writestr(info, z.read(name))
    assert blob == whole.getvalue()
    assert glob.glob(f"{side}.tmp-*") == []
    _same_arrays(trace, tpx_inspect.load(path))


def test_zip_stream_gives_the_members_before_a_flush_first():
    """Members before FLUSH are given (their packing waited for) before the next is read."""
    given: list[str] = []
    read: list[int] = []

    def members():
        yield "a.npy", npy_bytes(np.arange(100_000))  # NOTE: large: packed on a thread
        yield _zip_write.FLUSH
        read.append(len(given))
        yield "b.npy", npy_bytes(np.arange(3))

    stream = _zip_write.zip_stream(members(), None)
    for buf in stream:
        if bytes(buf) in (b"a.npy", b"b.npy"):
            given.append(bytes(buf).decode())
    assert read == [1] and given == ["a.npy", "b.npy"]
    assert _zip_write.zip_bytes([("a.npy", b"x"), _zip_write.FLUSH], False) == _zip_write.zip_bytes(
        [("a.npy", b"x")], False
    )


def _reference(values: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The value arrays, one value at a time (what values_arrays makes with whole columns)."""
    dtypes = sorted({a.dtype.str for a in values})
    index, shapes, bufs = [], [], {d: [] for d in dtypes}
    for a in values:
        d = a.dtype.str
        index.append([dtypes.index(d), sum(b.size for b in bufs[d]), a.size, a.ndim])
        shapes += a.shape
        bufs[d].append(np.ascontiguousarray(a).reshape(-1))
    out = {
        "values.index": np.array(index, np.int64).reshape(-1, 4),
        "values.shapes": np.array(shapes, np.int64),
        "values.dtypes": np.asarray(dtypes, dtype="U8") if dtypes else np.zeros(0, "U8"),
    }
    for c, d in enumerate(dtypes):
        out[f"values.{c}"] = np.concatenate(bufs[d]).astype(d)
    return out


def test_value_arrays_equal_the_per_value_construction():
    rng = random.Random(5)
    for trial in range(200):
        values = []
        for _ in range(rng.randrange(0, 30)):
            dims = (0, 1, 2, 3, 260) if rng.random() < 0.5 else (1, 2, 3)
            shape = tuple(
                rng.choice(dims) for _ in range(rng.randrange(0, 3 if 260 in dims else 5))
            )
            dtype = rng.choice((np.float32, np.float64, np.int64, np.bool_, np.uint8))
            a = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
            if a.ndim == 2 and rng.random() < 0.3:
                a = a.T
            values.append(a)
        arrays: dict = {}
        values_arrays(values, arrays)
        want = _reference(values)
        assert sorted(arrays) == sorted(want), trial
        for k, a in want.items():
            assert arrays[k].dtype == a.dtype and arrays[k].shape == a.shape, (trial, k)
            assert arrays[k].tobytes() == a.tobytes(), (trial, k)


def _derive_by_element(ids, plen, arrays):
    """Previews gathered element by element (what derive made before its row gather)."""
    index = arrays["values.index"][ids]
    out = np.full((len(ids), PREVIEW), np.nan)
    for r, (code, offset, _, _) in enumerate(index.tolist()):
        buf = arrays[f"values.{code}"]
        for j in range(int(plen[r])):
            out[r, j] = float(buf[offset + j])
    return out


def test_derived_previews_equal_the_element_by_element_gather():
    """Rows of a sliding window, and the values at the buffer's end (short, empty, a buffer
    shorter than a preview) gathered alone: the same bits as one element at a time."""
    rng = random.Random(11)
    for trial in range(150):
        values = [
            np.arange(rng.choice((0, 1, 2, 5, 6, 7, 16)), dtype=rng.choice((np.float64, np.int32)))
            * 1.5 ** rng.randrange(3)
            for _ in range(rng.randrange(1, 12))
        ]
        arrays: dict = {}
        values_arrays(values, arrays)
        ids = np.array(rng.sample(range(len(values)), len(values)), np.int64)
        plen = np.array([min(PREVIEW, values[i].size) for i in ids.tolist()], np.int64)
        plen = np.array([rng.randrange(p + 1) for p in plen.tolist()], np.int64)
        got = derive(ids, plen, arrays)
        want = _derive_by_element(ids, plen, arrays)
        assert got.view(np.uint64).tobytes() == want.view(np.uint64).tobytes(), trial


def test_source_runs_equal_the_runs_of_the_numbered_column():
    """The source column numbered per run (then neighbours of one number joined) is what
    numbering every node and taking the runs gave: the same runs, the same numbering."""
    rng = random.Random(3)
    lines = [None, ("a.py", 1, "f"), ("a.py", True, "f"), ["a.py", 1, "f"], ("b.py", 2, "g")]
    for trial in range(300):
        shared = [line if line is None else type(line)(line) for line in lines]
        column = []
        for _ in range(rng.randrange(0, 40)):
            k = rng.randrange(len(lines))
            fresh = lines[k] is not None and rng.random() < 0.3
            column += [type(lines[k])(lines[k]) if fresh else shared[k]] * rng.randrange(1, 4)
        runs, by_run, by_node = to_runs(column), {}, {}
        got = fmt._joined(fmt._source_refs(runs["values"], by_run), runs["counts"])
        assert got == to_runs(fmt._source_refs(column, by_node)), trial
        assert by_run == by_node, trial
