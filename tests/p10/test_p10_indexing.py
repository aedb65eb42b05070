"""Indexing against NumPy: basic keys give views, integer arrays and masks gather copies,
take/take_along_axis, scatter-add with repeated indices, setitem."""

from __future__ import annotations

import numpy as np
import pytest

import p10
from tests.helpers.p10_cases import assert_same_array

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

BASIC = [
    1,
    -1,
    (0, 2),
    (slice(None), -2),
    slice(1, None),
    slice(None, None, -1),
    (slice(None, None, 2), slice(1, 4, 2)),
    (Ellipsis, 0),
    (None, 0, None),
    (0, Ellipsis, None),
    (Ellipsis,),
    (slice(5, 10),),
    (1, 2, 3),
    (),
]
ADVANCED = [
    [2, 0],
    (slice(None), [3, 3, 0]),
    ([0, 2], [1, 3]),
    ([[0], [2]], [[1, 2]]),
    (Ellipsis, [4, 0]),
    (np.array([0, -1]),),
    (1, [0, 1], slice(None, 2)),
    A[:, 0, 0] > 10,
    (slice(None), A[0, :, 0] > 12),
    A > 40,
    (A[:, :, 0] > 20, [0]),
]


@pytest.mark.parametrize("key", BASIC, ids=str)
def test_basic_indexing_matches_numpy_and_is_a_view(key):
    x = p10.asarray(A)
    out = x[key]
    assert_same_array(out.numpy(), A[key], str(key))
    if out.size and out.ndim:  # NOTE: like NumPy, a full integer key gives a 0-d copy
        assert np.shares_memory(out.numpy(), x.numpy())


@pytest.mark.parametrize("key", ADVANCED, ids=lambda k: str(k)[:40])
def test_advanced_indexing_matches_numpy_and_copies(key):
    x = p10.asarray(A)
    tensor_key = (
        tuple(p10.asarray(k) if isinstance(k, list | np.ndarray) else k for k in key)
        if isinstance(key, tuple)
        else p10.asarray(key)
    )
    for k in (key, tensor_key):
        out = x[k]
        assert_same_array(out.numpy(), A[key], str(key))
        assert not np.shares_memory(out.numpy(), x.numpy())


def test_index_with_0d_integer_tensor_and_numpy_int():
    x = p10.asarray(A)
    assert x[p10.asarray(1)].shape == (4, 5)
    assert x[np.int64(2), 1].tolist() == A[2, 1].tolist()
    assert x[1 : p10.asarray(3)].shape == (2, 4, 5)


def test_indexing_0d_and_empty():
    s = p10.asarray(2.5)
    assert s[()].item() == 2.5 and s[None].shape == (1,) and s[...].shape == ()
    e = p10.zeros((0, 3))
    assert e[:, 1].shape == (0,) and e[p10.asarray([], dtype="int64")].shape == (0, 3)


def test_take_and_take_along_axis():
    x = p10.asarray(A)
    idx = np.array([3, 0, 3])
    assert_same_array(p10.take(x, idx, axis=1).numpy(), np.take(A, idx, axis=1))
    assert_same_array(x.take(p10.asarray(idx), axis=-1).numpy(), np.take(A, idx, axis=-1))
    assert_same_array(p10.take(x, idx).numpy(), np.take(A, idx))
    order = np.argsort(-A, axis=1)
    assert_same_array(
        p10.take_along_axis(x, order, axis=1).numpy(), np.take_along_axis(A, order, axis=1)
    )
    top = np.argmax(A, axis=-1)[..., None]
    assert_same_array(p10.take_along_axis(x, top).numpy(), np.take_along_axis(A, top, axis=-1))


def test_index_add_sums_repeated_indices():
    base = np.zeros((4, 3), np.float32)
    idx = np.array([1, 3, 1, 1])
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    expected = base.copy()
    np.add.at(expected, idx, values)
    out = p10.index_add(p10.asarray(base), p10.asarray(idx), p10.asarray(values))
    assert_same_array(out.numpy(), expected)
    mask_out = p10.index_add(p10.zeros(4), p10.asarray([True, False, True, False]), 2.0)
    assert mask_out.tolist() == [2.0, 0.0, 2.0, 0.0]
    assert p10.index_add(p10.zeros((2, 2)), (slice(None), 1), 1.0).tolist() == [[0, 1], [0, 1]]


def test_index_put_is_out_of_place():
    x = p10.zeros(4)
    out = p10.index_put(x, p10.asarray([0, 2]), p10.asarray([5.0, 6.0]))
    assert out.tolist() == [5.0, 0.0, 6.0, 0.0] and x.tolist() == [0.0] * 4 and x.version == 0


@pytest.mark.parametrize(
    "key, value",
    [
        ((0, 1), 9.0),
        (slice(None, None, 2), -1.0),
        ((Ellipsis, 0), np.array([1, 2, 3, 4], np.float32)),
        ([0, 2], 7.0),
        (A[:, :, 0] > 20, 0.5),
        ((slice(None), [1, 1]), 3.0),
    ],
    ids=str,
)
def test_setitem_matches_numpy(key, value):
    expected = A.copy()
    expected[key] = value
    x = p10.asarray(A)
    x[key] = value
    assert_same_array(x.numpy(), expected)
    assert x.version == 1


def test_setitem_with_a_tensor_value_and_key():
    x = p10.zeros((2, 3))
    x[p10.asarray([1])] = p10.asarray([1.0, 2.0, 3.0])
    assert x.tolist() == [[0, 0, 0], [1, 2, 3]]
    x[x > 1.5] = 0.0
    assert x.tolist() == [[0, 0, 0], [1, 0, 0]]


@pytest.mark.parametrize(
    "key",
    [0, -3, 2, (1, -1), slice(None), slice(1, None, 2), slice(None, None, -1), (slice(0, 2), 3)]
    + [(), (0, slice(None), 1)],
    ids=repr,
)
def test_simple_keys_take_the_shortcut_with_getitems_normalized_key(key):
    from p10._index_ops import normalize_key, simple_key

    x = p10.arange(24).reshape((3, 4, 2))
    assert simple_key(x.shape, key) == normalize_key(x, key)[0]
    np.testing.assert_array_equal(x[key].numpy(), x.numpy()[key])
    view = x[key]
    x += 1  # basic indexing gives a view: it shares the version counter
    assert view.version == x.version == 1


@pytest.mark.parametrize(
    "key",
    [3, -4, (0, 0, 0, 0), True, np.int64(1), slice(0, 2, 0), slice(np.int64(1), None), None]
    + [Ellipsis, (0, Ellipsis), [0, 1]],
    ids=repr,
)
def test_other_keys_take_the_general_path_and_its_errors(key):
    from p10._index_ops import simple_key

    x = p10.arange(24).reshape((3, 4, 2))
    assert simple_key(x.shape, key) is None
    try:
        expected = x.numpy()[key]
    except (IndexError, ValueError):
        with pytest.raises((p10.IndexOutOfRangeError, p10.ArgumentError, p10.DTypeError)):
            x[key]
        return
    if isinstance(key, bool):
        with pytest.raises(p10.DTypeError, match="bool index"):
            x[key]
        return
    np.testing.assert_array_equal(x[key].numpy(), expected)
