"""Array API sorting, searching, set functions, cumulative_prod, roll/tril/triu (issue 18):
values against NumPy, stability, NaN handling, dtypes and errors."""

from __future__ import annotations

import numpy as np
import pytest

import p10


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "float32", "bool"])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_is_stable_both_ways(dtype: str, descending: bool) -> None:
    x = np.array([[3, -128, 1, 3, -128, 0], [1, 1, 0, 0, 2, 2]]).astype(dtype)
    out = p10.argsort(p10.asarray(x), axis=1, descending=descending).numpy()
    key = -x.astype(np.float64) if descending else x
    expected = np.argsort(key, axis=1, kind="stable")
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.int64


def test_sort_matches_numpy_and_puts_nan_last() -> None:
    x = np.array([[2.0, np.nan, -1.0], [0.5, 0.25, 3.0]], np.float32)
    out = p10.sort(p10.asarray(x), axis=-1)
    np.testing.assert_array_equal(out.numpy(), np.sort(x, axis=-1))
    down = p10.sort(p10.asarray(x[1:]), axis=1, descending=True).numpy()
    np.testing.assert_array_equal(down, [[3.0, 0.5, 0.25]])


def test_sort_of_a_0d_tensor_is_an_error() -> None:
    with pytest.raises(p10.ShapeError, match="argsort"):
        p10.sort(p10.asarray(1.0))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy_with_nans(side: str) -> None:
    x1 = np.array([-1.0, 2.0, 2.0, 5.0, np.nan])
    x2 = np.array([[2.0, np.nan], [-3.0, 9.0]])
    out = p10.searchsorted(p10.asarray(x1), p10.asarray(x2), side=side)
    np.testing.assert_array_equal(out.numpy(), np.searchsorted(x1, x2, side=side))
    assert out.dtype == np.int64


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_binary_search_of_large_inputs_matches_numpy(side: str) -> None:
    rng = np.random.default_rng(7)
    x1 = np.sort(np.r_[rng.integers(0, 50, 997).astype(float), np.nan, np.nan])
    x2 = np.r_[rng.integers(-5, 55, 299).astype(float), np.nan].reshape(4, 5, 15)
    assert x1.size * x2.size > p10._sorting._PAIRWISE_LIMIT  # the binary-search path
    out = p10.searchsorted(p10.asarray(x1), p10.asarray(x2), side=side)
    assert out.shape == x2.shape
    np.testing.assert_array_equal(out.numpy(), np.searchsorted(x1, x2, side=side))


def test_searchsorted_with_a_sorter_and_errors() -> None:
    x1 = np.array([5, 1, 3])
    out = p10.searchsorted(p10.asarray(x1), p10.asarray([2, 4]), sorter=p10.asarray([1, 2, 0]))
    assert out.tolist() == np.searchsorted(x1, [2, 4], sorter=[1, 2, 0]).tolist()
    with pytest.raises(p10.ArgumentError, match="side"):
        p10.searchsorted(p10.asarray(x1), p10.asarray([1]), side="middle")
    with pytest.raises(p10.ShapeError, match="1-D"):
        p10.searchsorted(p10.ones((2, 2)), p10.ones(2))


def test_unique_functions_match_numpy_and_keep_nans_distinct() -> None:
    x = np.array([[2.0, np.nan, 1.0], [np.nan, 2.0, 2.0]])
    t = p10.asarray(x)
    r = p10.unique_all(t)
    np.testing.assert_array_equal(r.values.numpy(), [1.0, 2.0, np.nan, np.nan])
    np.testing.assert_array_equal(r.counts.numpy(), [1, 3, 1, 1])
    np.testing.assert_array_equal(x.ravel()[r.indices.numpy()], r.values.numpy())
    np.testing.assert_array_equal(r.values.numpy()[r.inverse_indices.numpy()], x)
    assert r.inverse_indices.shape == x.shape
    assert p10.unique_values(t).shape == (4,)
    assert p10.unique_counts(t).counts.tolist() == [1, 3, 1, 1]
    assert p10.unique_inverse(p10.asarray(7)).inverse_indices.shape == ()


@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_prod_matches_numpy(include_initial: bool) -> None:
    x = np.array([[1.5, 0.0, 2.0, -1.0], [2.0, 3.0, 0.5, 4.0]])
    out = p10.cumulative_prod(p10.asarray(x), axis=1, include_initial=include_initial).numpy()
    expected = np.cumprod(x, axis=1)
    if include_initial:
        expected = np.concatenate([np.ones((2, 1)), expected], axis=1)
    np.testing.assert_allclose(out, expected)
    assert (
        p10.cumulative_prod(p10.asarray(x), axis=0).numpy().tolist()
        == np.cumprod(x, axis=0).tolist()
    )


def test_cumulative_prod_dtypes_and_errors() -> None:
    assert p10.cumulative_prod(p10.asarray([1, 2, 3], dtype="int8")).dtype == np.int64
    assert p10.cumulative_prod(p10.asarray([1, 2]), dtype="float64").dtype == np.float64
    assert p10.cumulative_prod(p10.asarray([], dtype="float32")).shape == (0,)
    with pytest.raises(p10.ShapeError, match="axis is required"):
        p10.cumulative_prod(p10.ones((2, 2)))


def test_roll_tril_triu_match_numpy() -> None:
    x = np.arange(12).reshape(3, 4)
    t = p10.asarray(x)
    assert p10.roll(t, 5).tolist() == np.roll(x, 5).tolist()
    assert p10.roll(t, (1, -2), axis=(0, 1)).tolist() == np.roll(x, (1, -2), (0, 1)).tolist()
    assert p10.roll(t, 1, axis=(0, 1)).tolist() == np.roll(x, 1, (0, 1)).tolist()
    assert p10.tril(t, k=1).tolist() == np.tril(x, 1).tolist()
    assert p10.triu(t, k=-1).tolist() == np.triu(x, -1).tolist()
    with pytest.raises(p10.ShapeError, match="tril"):
        p10.tril(p10.ones(3))


def test_a_bool_mask_must_match_the_axes_it_indexes() -> None:
    with pytest.raises(IndexError, match="bool mask of shape"):
        p10.zeros(0)[p10.asarray([False])]
    with pytest.raises(p10.IndexOutOfRangeError, match="masks must match exactly"):
        p10.zeros((2, 3))[:, p10.asarray([True, False])]
    assert p10.arange(6).reshape((2, 3))[:, p10.asarray([True, False, True])].tolist() == [
        [0, 2],
        [3, 5],
    ]


def test_a_bool_mask_with_an_empty_axis_selects_nothing_as_numpy() -> None:
    for shape, mask_shape in [((0, 1), (0, 0)), ((2, 3), (2, 0)), ((2, 3, 4), (0, 3))]:
        x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
        mask = np.zeros(mask_shape, dtype=bool)
        assert p10.asarray(x)[p10.asarray(mask)].shape == x[mask].shape
        t = p10.asarray(x)
        t[p10.asarray(mask)] = -1.0
        assert t.tolist() == x.tolist()
    with pytest.raises(p10.IndexOutOfRangeError, match="or have an empty axis"):
        p10.zeros((2, 3))[p10.zeros((3, 0), dtype="bool")]
