"""The sidecar's value index checked over whole columns (``_value_index``) against the exact
loop over the values (``_check_arrays.value_shapes``): the same verdict and the same message on
damaged indexes, and the lazily made values equal to the ones saved."""

from __future__ import annotations

import dataclasses
import random

import numpy as np

import tpx_inspect
from tests.helpers.mutations import make_base
from tpx_inspect import TraceFormatError, _check_arrays, _value_index
from tpx_inspect._sidecar_write import values_arrays
from tpx_inspect.tables import PackedValues


def _values(rng: random.Random) -> list[np.ndarray]:
    out = []
    for _ in range(rng.randrange(1, 40)):
        shape = tuple(rng.choice((0, 1, 2, 3, 5)) for _ in range(rng.randrange(0, 4)))
        dtype = rng.choice((np.float32, np.float64, np.int64, np.bool_))
        a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)
        if a.ndim == 2 and rng.random() < 0.3:  # NOTE: not C-contiguous: saved all the same
            a = a.T if rng.random() < 0.5 else np.concatenate([a, a], axis=1)[:, ::2]
        out.append(a)
    return out


def _verdict(fn, index, shapes, sizes):
    try:
        return fn(index, shapes, sizes) is not None
    except TraceFormatError as e:
        return str(e)


def _damaged(rng: random.Random, arrays: dict) -> tuple[np.ndarray, np.ndarray]:
    index, shapes = arrays["values.index"].copy(), arrays["values.shapes"].copy()
    target = rng.choice(("index", "index", "shapes", "dtype"))
    if target == "dtype":
        return index.astype(np.uint64), shapes.astype(np.uint32)
    a = index if target == "index" or not len(shapes) else shapes
    pos = tuple(rng.randrange(n) for n in a.shape)
    a[pos] = rng.choice((-1, -(2**40), 1, 2, 64, 2**31, 2**62 + 3, 2**63 - 1, a[pos] + 1,
                         a[pos] - 1, 0))  # fmt: skip
    return index, shapes


def test_the_column_check_agrees_with_the_exact_loop():
    rng = random.Random(13)
    seen = {"passed": 0, "refused": 0}
    for _ in range(600):
        arrays: dict = {}
        values = _values(rng)
        values_arrays(values, arrays)
        sizes = [len(arrays[f"values.{c}"]) for c in range(len(arrays["values.dtypes"]))]
        index, shapes = _damaged(rng, arrays) if rng.random() < 0.8 else (
            arrays["values.index"], arrays["values.shapes"])  # fmt: skip
        exact = _verdict(_check_arrays.value_shapes, index, shapes, sizes)
        assert _verdict(_value_index.starts, index, shapes, sizes) == exact
        seen["passed" if exact is True else "refused"] += 1
    assert min(seen.values()) > 100, seen


def test_packed_values_are_the_saved_values():
    rng, strided = random.Random(7), 0
    for _ in range(20):
        values = _values(rng)
        strided += sum(not a.flags.c_contiguous for a in values)
        arrays: dict = {}
        values_arrays(values, arrays)
        store = _value_index.load_values(arrays, "t.json")
        assert isinstance(store, PackedValues) and len(store) == len(values)
        for i in (*range(len(values)), -1):
            got = store.get(i)
            assert got.dtype == values[i].dtype and got.shape == values[i].shape
            assert np.array_equal(got, values[i]) and not got.flags.writeable
        assert all(a is b for a, b in zip(store, store, strict=True))  # made once, then kept
    assert strided > 5  # NOTE: values that are not C-contiguous are saved too


def test_a_loaded_trace_saves_the_same_bytes_and_values(tmp_path):
    folder = make_base(tmp_path / "run")
    trace = tpx_inspect.load(str(folder / "trace.json"))
    tpx_inspect.save(trace, str(tmp_path / "again.json"))
    assert (tmp_path / "again.npz").read_bytes() == (folder / "trace.npz").read_bytes()
    g = trace.graphs[0]
    out = g.node_values(len(g.nodes) - 1).output
    assert out is not None and not out.flags.writeable
    assert np.array_equal(out, g.values.get(int(g.tables.summaries[g.tables.nodes[-1, 0], 8])))


def test_a_loaded_trace_saves_its_packed_values_as_they_are(tmp_path, monkeypatch):
    """Saved again whole, a loaded trace writes its value buffers and index as loaded (no view
    made: the builder is not called) and the same bytes; its second graph alone (which keeps
    none of the values) and a store whose buffers are not what the builder writes go through
    the builder."""
    from tpx_inspect import format as fmt

    folder = make_base(tmp_path / "run")
    trace = tpx_inspect.load(str(folder / "trace.json"))
    built = []
    real = fmt.values_arrays
    monkeypatch.setattr(fmt, "values_arrays", lambda *a: built.append(1) or real(*a))
    tpx_inspect.save(trace, str(tmp_path / "again.json"))
    assert built == [] and trace.graphs[0].values._arrays.count(None) == len(trace.graphs[0].values)
    assert (tmp_path / "again.npz").read_bytes() == (folder / "trace.npz").read_bytes()
    run = dataclasses.replace(trace.runs[0], graphs=trace.runs[0].graphs[1:])
    one = dataclasses.replace(trace, runs=(run,))
    tpx_inspect.save(one, str(tmp_path / "one.json"))
    assert built == [1]
    store = trace.graphs[0].values
    bufs = store.packed()[0]
    store._bufs = [np.concatenate([b, b[:1]]) for b in bufs]  # NOTE: a buffer with a spare item
    tpx_inspect.save(trace, str(tmp_path / "spare.json"))
    assert built == [1, 1]
    again = tpx_inspect.load(str(tmp_path / "spare.json"))
    assert (tmp_path / "spare.npz").read_bytes() == (folder / "trace.npz").read_bytes()
    assert all(np.array_equal(a, b) for a, b in zip(again.graphs[0].values, store, strict=True))
