"""The sidecar stores the summaries and previews tables column-major (``fortran_order`` in the
``.npy`` header): the loader, ``np.load`` and a re-save give back the same tables, and a
sidecar written row-major (every trace saved before) still loads to the same trace."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np

import tpx_inspect
from tests.helpers.mutations import make_base
from tpx_inspect.format import TABLES


def _tables(trace):
    return [[getattr(g.tables, k) for k in TABLES] for g in trace.graphs]


def _same(a, b):
    for ta, tb in zip(_tables(a), _tables(b), strict=True):
        for x, y in zip(ta, tb, strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert np.array_equal(x, y, equal_nan=True)


def test_summaries_and_previews_are_stored_column_major(tmp_path):
    folder = make_base(tmp_path / "run")
    npz = np.load(folder / "trace.npz", allow_pickle=False)
    for key in npz.files:
        by_column = key.endswith((".summaries", "previews")) and npz[key].shape[0] > 1
        assert npz[key].flags.f_contiguous == by_column or npz[key].ndim < 2 or not npz[key].size
    trace = tpx_inspect.load(str(folder / "trace.json"))
    s = trace.graphs[0].tables.summaries  # NOTE: a slice of the run's table, by column
    assert s.strides[0] == s.itemsize
    tpx_inspect.save(trace, str(tmp_path / "again.json"))
    assert (tmp_path / "again.npz").read_bytes() == (folder / "trace.npz").read_bytes()
    _same(trace, tpx_inspect.load(str(tmp_path / "again.json")))


def test_a_row_major_sidecar_still_loads_to_the_same_trace(tmp_path):
    folder = make_base(tmp_path / "run")
    new = tpx_inspect.load(str(folder / "trace.json"))
    with np.load(folder / "trace.npz", allow_pickle=False) as z:
        arrays = {k: np.ascontiguousarray(z[k]) for k in z.files}
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # NOTE: what np.savez writes: every member row-major
    blob = buf.getvalue()
    (folder / "trace.npz").write_bytes(blob)
    doc = json.loads((folder / "trace.json").read_text())
    doc["sidecar"].update(bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest())
    (folder / "trace.json").write_text(json.dumps(doc))
    old = tpx_inspect.load(str(folder / "trace.json"))
    s = old.graphs[0].tables.summaries
    assert s.strides[1] == s.itemsize
    _same(old, new)
