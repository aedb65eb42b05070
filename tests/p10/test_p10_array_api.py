"""The Array API names added for issue 18: values against NumPy, dtypes, operators, errors."""

from __future__ import annotations

import numpy as np
import pytest

import p10

X = np.array([-0.75, -0.2, 0.0, 0.3, 0.9], dtype=np.float32)
Y = np.array([1.5, -2.0, 0.5, -0.25, 3.0], dtype=np.float32)

UNARY = {
    "acos": (np.arccos, X),
    "acosh": (np.arccosh, 1.0 + np.abs(Y)),
    "asin": (np.arcsin, X),
    "asinh": (np.arcsinh, Y),
    "atan": (np.arctan, Y),
    "atanh": (np.arctanh, X),
    "cosh": (np.cosh, Y),
    "sinh": (np.sinh, Y),
    "log2": (np.log2, np.abs(Y)),
    "log10": (np.log10, np.abs(Y)),
    "trunc": (np.trunc, 3 * Y),
    "signbit": (np.signbit, np.array([-0.0, 0.0, -1.0, 2.0], np.float32)),
}
BINARY = {
    "atan2": np.arctan2,
    "logaddexp": np.logaddexp,
    "hypot": np.hypot,
    "copysign": np.copysign,
    "nextafter": np.nextafter,
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_matches_numpy(name: str) -> None:
    ref, x = UNARY[name]
    out = getattr(p10, name)(p10.asarray(x))
    expected = ref(x)
    assert out.dtype == expected.dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_matches_numpy_with_broadcasting(name: str) -> None:
    x, y = X.reshape(5, 1), Y
    out = getattr(p10, name)(p10.asarray(x), p10.asarray(y))
    expected = BINARY[name](x, y)
    assert (out.shape, out.dtype) == (expected.shape, expected.dtype)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_float_functions_of_integers_give_the_default_float() -> None:
    assert p10.atan2(p10.asarray([1]), p10.asarray([1])).dtype == p10.float32
    assert p10.log2(p10.asarray([8])).tolist() == [3.0]


def test_trunc_keeps_integer_dtype() -> None:
    out = p10.trunc(p10.asarray([3, -4], dtype="int16"))
    assert (out.dtype, out.tolist()) == (p10.int16, [3, -4])


def test_shift_operators() -> None:
    x = p10.asarray([1, -8, 12], dtype="int32")
    assert (x << 2).tolist() == [4, -32, 48]
    assert (x >> 1).tolist() == [0, -4, 6]
    assert (2 << p10.asarray([1, 2])).tolist() == [4, 8]
    assert (64 >> p10.asarray([1, 2])).tolist() == [32, 16]
    assert (x << 2).dtype == p10.int32
    y = p10.asarray([1, 2])
    y <<= 3
    assert y.tolist() == [8, 16]
    y >>= 2
    assert y.tolist() == [2, 4]


def test_shift_of_floats_names_the_op_and_the_fix() -> None:
    with pytest.raises(p10.DTypeError, match=r"bitwise_left_shift.*float32.*astype"):
        p10.bitwise_left_shift(p10.asarray([1.0]), 1)


def test_namespace_info_lists_dtypes_devices_and_defaults() -> None:
    info = p10.__array_namespace_info__()
    assert info.default_device() == "cpu" and info.devices()[0] == "cpu"
    assert list(info.dtypes(kind="unsigned integer")) == ["uint8", "uint16", "uint32", "uint64"]
    assert list(info.dtypes(kind="complex floating")) == ["complex64", "complex128"]
    assert info.default_dtypes()["real floating"] == p10.float32
    assert info.default_dtypes()["complex floating"] == p10.complex64
    with p10.default_dtype("float64"):
        assert info.default_dtypes()["real floating"] == p10.float64
        assert info.default_dtypes()["complex floating"] == p10.complex128
    assert info.capabilities()["boolean indexing"] is True


def test_unsigned_dtypes_and_the_sum_of_uint8() -> None:
    x = p10.asarray([250, 10], dtype="uint8")
    assert p10.sum(x).dtype == p10.uint64 and p10.sum(x).item() == 260
    for name in ("uint16", "uint32", "uint64"):
        t = p10.asarray([1, 2], dtype=name)
        assert (t.dtype, (t + 1).dtype, t.tolist()) == (getattr(p10, name), t.dtype, [1, 2])


def test_finfo_fields_are_python_numbers() -> None:
    fi = p10.finfo(p10.float32)
    assert [type(v) for v in (fi.bits, fi.eps, fi.max, fi.min, fi.smallest_normal)] == [
        int, float, float, float, float
    ]  # fmt: skip
    assert fi.eps == float(np.finfo(np.float32).eps) and fi.dtype == p10.float32
    assert p10.finfo(p10.ones(1, dtype="float64")).bits == 64
    with pytest.raises(p10.DTypeError, match="finfo: int32 is not a floating dtype"):
        p10.finfo(p10.int32)


def test_isdtype_complex_floating_is_true_only_for_the_complex_dtypes() -> None:
    info = p10.__array_namespace_info__()
    found = [d for d in info.dtypes().values() if p10.isdtype(d, "complex floating")]
    assert found == [p10.complex64, p10.complex128]
    assert p10.isdtype(p10.uint32, "numeric") and p10.isdtype(p10.complex64, "numeric")


def test_astype_to_device_and_to_device() -> None:
    x = p10.asarray([1.5, 2.5])
    out = p10.astype(x, "int32", device="cpu")
    assert (out.dtype, out.device, out.tolist()) == (p10.int32, "cpu", [1, 2])
    assert x.to_device("cpu") is x
    with pytest.raises(ValueError, match="stream"):
        x.to_device("cpu", stream=1)


def test_dlpack_copy_and_device_arguments() -> None:
    base = np.zeros(3)
    shared, copied = p10.from_dlpack(base), p10.from_dlpack(base, copy=True, device="cpu")
    base[0] = 7.0
    assert (shared.tolist()[0], copied.tolist()[0]) == (7.0, 0.0)
    t = p10.asarray([1.0, 2.0])
    back = np.from_dlpack(t, copy=True)
    np.testing.assert_array_equal(back, [1.0, 2.0])
    capsule = t.__dlpack__(stream=None, max_version=(1, 0), dl_device=(1, 0), copy=False)
    assert capsule is not None


def test_vecdot_does_not_broadcast_the_contracted_axis() -> None:
    with pytest.raises(
        p10.ShapeError, match=r"vecdot: the contracted axis -1 has size 1 in \(1,\)"
    ):
        p10.vecdot(p10.asarray([1.0]), p10.asarray([1.0, 2.0, 3.0]))
    out = p10.vecdot(p10.ones((2, 1, 3)), p10.ones((4, 3)))
    assert (out.shape, out.tolist()[0][0]) == ((2, 4), 3.0)
    assert p10.vecdot(p10.ones((3, 2)), p10.ones((3, 2)), axis=0).tolist() == [3.0, 3.0]


def test_vecdot_keeps_small_integer_dtypes() -> None:
    x = p10.asarray([[1, 2], [3, 4]], dtype="int8")
    out = p10.vecdot(x, x)
    assert (out.dtype, out.tolist()) == (p10.int8, [5, 25])


def test_repeat_with_one_count_per_element() -> None:
    x = p10.asarray([[1, 2], [3, 4]])
    assert p10.repeat(x, p10.asarray([1, 2]), axis=1).tolist() == [[1, 2, 2], [3, 4, 4]]
    assert p10.repeat(x, [2, 0], axis=0).tolist() == [[1, 2], [1, 2]]
    assert p10.repeat(x, p10.asarray([2])).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    with pytest.raises(p10.ArgumentError, match=r"repeat: repeats must be an int or 1-D"):
        p10.repeat(x, [1, 2, 3], axis=0)


def test_softmax_over_an_empty_axis_is_empty() -> None:
    for fn in (p10.softmax, p10.log_softmax):
        out = fn(p10.ones((2, 0)), axis=1)
        assert (out.shape, out.dtype) == ((2, 0), p10.float32)


@pytest.mark.parametrize(
    "key",
    [(True,), (False,), (0, True), (Ellipsis, True), (True, slice(None), False), (True, 1)],
    ids=str,
)
def test_zero_d_bool_mask_getitem_matches_numpy(key: tuple) -> None:
    a = np.arange(6.0).reshape(2, 3)
    p_key = tuple(p10.asarray(k) if isinstance(k, bool) else k for k in key)
    np_key = tuple(np.bool_(k) if isinstance(k, bool) else k for k in key)
    out, expected = p10.asarray(a)[p_key], a[np_key]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_zero_d_bool_mask_setitem() -> None:
    x = p10.zeros((2, 3))
    x[p10.asarray(False)] = 5.0
    assert p10.sum(x).item() == 0.0
    x[p10.asarray(True)] = p10.ones((1, 2, 3))
    x[0, p10.asarray(True)] = 2.0
    assert x.tolist() == [[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]]


A3 = np.arange(24.0).reshape(2, 3, 4) ** 1.5


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_matches_numpy(indexing: str) -> None:
    xs = [np.arange(3.0), np.arange(2.0) + 5, np.arange(4.0)]
    for k in (1, 2, 3):
        out = p10.meshgrid(*map(p10.asarray, xs[:k]), indexing=indexing)
        for o, e in zip(out, np.meshgrid(*xs[:k], indexing=indexing), strict=True):
            np.testing.assert_array_equal(o.numpy(), e)


def test_broadcast_arrays_moveaxis_unstack_match_numpy() -> None:
    out = p10.broadcast_arrays(p10.ones((2, 1)), p10.asarray([1.0, 2.0, 3.0]))
    assert [o.shape for o in out] == [(2, 3), (2, 3)]
    for src, dst in [(0, -1), ((0, 1), (2, 0)), (-1, 1)]:
        expected = np.moveaxis(A3, src, dst)
        np.testing.assert_array_equal(p10.moveaxis(p10.asarray(A3), src, dst).numpy(), expected)
    with pytest.raises(p10.AxisError, match="moveaxis"):
        p10.moveaxis(p10.asarray(A3), (0, 0), (1, 2))
    parts = p10.unstack(p10.asarray(A3), axis=1)
    assert len(parts) == 3
    np.testing.assert_array_equal(parts[2].numpy(), A3[:, 2])


def test_diff_cumulative_sum_count_nonzero_match_numpy() -> None:
    x = p10.asarray(A3)
    np.testing.assert_allclose(p10.diff(x, axis=1, n=2).numpy(), np.diff(A3, n=2, axis=1))
    pre = p10.ones((2, 3, 1))
    np.testing.assert_allclose(
        p10.diff(x, prepend=pre).numpy(), np.diff(A3, prepend=np.ones((2, 3, 1)))
    )
    out = p10.cumulative_sum(x, axis=2, include_initial=True)
    expected = np.concatenate([np.zeros((2, 3, 1)), np.cumsum(A3, axis=2)], axis=2)
    np.testing.assert_allclose(out.numpy(), expected)
    with pytest.raises(p10.AxisError, match="cumulative_sum: axis is required"):
        p10.cumulative_sum(x)
    for dt in ("uint8", "int8", "uint16", "int32"):  # dtype=: the sums wrap in that dtype
        ints = np.array([100, 120, 50], dtype=dt)
        out = p10.cumulative_sum(p10.asarray(ints), dtype=dt, include_initial=True)
        assert out.dtype == p10.asarray(ints).dtype
        assert out.tolist() == np.cumsum(np.r_[0, ints].astype(dt), dtype=dt).tolist()
    empty = p10.cumulative_sum(p10.zeros(0, dtype="uint8"), dtype="uint8", include_initial=True)
    assert (empty.dtype, empty.tolist()) == (p10.uint8, [0])
    assert p10.cumulative_sum(p10.asarray(np.array([3], dtype="uint8"))).dtype == p10.uint64
    c = p10.count_nonzero(p10.asarray([[0, 1, 2], [0, 0, 3]]), axis=1, keepdims=True)
    assert (c.dtype, c.tolist()) == (p10.int64, [[2], [1]])
