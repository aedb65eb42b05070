"""Creation functions, dtypes as module attributes, finfo/iinfo, the default float dtype, and
seeded random numbers."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import p10

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64"]


def test_dtypes_are_module_attributes_equal_to_numpys():
    for name in DTYPES:
        d = getattr(p10, name)
        assert d == np.dtype(name) and p10.asarray([1], dtype=d).dtype == d
    assert p10.bool is p10.bool_


@pytest.mark.parametrize(
    "obj, dtype",
    [
        ([1, 2], "int64"),
        ([1.0, 2], "float32"),
        (2.5, "float32"),
        (True, "bool"),
        ([[True], [False]], "bool"),
        (np.arange(3, dtype=np.int16), "int16"),
        (np.float64(1.0), "float64"),
        ([], "float32"),
    ],
    ids=str,
)
def test_asarray_infers_dtypes(obj, dtype):
    out = p10.asarray(obj)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), np.asarray(obj))


def test_asarray_copies_by_default_and_honours_copy_false():
    a = np.ones(2, np.float32)
    shared = p10.asarray(a, copy=False)
    a[0] = 7.0
    assert shared.tolist() == [7.0, 1.0] and p10.asarray(a).tolist() == [7.0, 1.0]
    with pytest.raises(p10.ArgumentError, match="copy=False"):
        p10.asarray([1.0], copy=False)
    with pytest.raises(p10.ArgumentError, match="float64 -> float32 needs a copy"):
        p10.asarray(np.ones(2), dtype="float32", copy=False)
    assert p10.asarray(p10.asarray([1, 2]), dtype="float64").dtype == p10.float64
    assert p10.Tensor([1.0, 2.0]).tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: p10.zeros((2, 3)), np.zeros((2, 3), "f4")),
        (lambda: p10.ones(3, dtype="int8"), np.ones(3, "i1")),
        (lambda: p10.empty((0, 2)), np.zeros((0, 2), "f4")),
        (lambda: p10.full((2,), 7), np.full(2, 7)),
        (lambda: p10.full((2,), True), np.full(2, True)),
        (lambda: p10.full((2, 1), 0.5, dtype="float64"), np.full((2, 1), 0.5)),
        (lambda: p10.zeros_like(p10.ones((2,), dtype="int32")), np.zeros(2, "i4")),
        (lambda: p10.ones_like(p10.zeros(2), dtype="bool"), np.ones(2, bool)),
        (lambda: p10.full_like(p10.zeros((1, 2)), 3), np.full((1, 2), 3, "f4")),
        (lambda: p10.empty_like(p10.zeros(3, dtype="uint8")), np.zeros(3, "u1")),
        (lambda: p10.arange(5), np.arange(5)),
        (lambda: p10.arange(1, 7, 2), np.arange(1, 7, 2)),
        (lambda: p10.arange(0.0, 1.0, 0.25), np.arange(0, 1, 0.25, dtype="f4")),
        (lambda: p10.arange(5, 0, -2, dtype="int8"), np.arange(5, 0, -2, dtype="i1")),
        (lambda: p10.arange(0), np.arange(0)),
        (lambda: p10.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype="f4")),
        (lambda: p10.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, False, dtype="f4")),
        (lambda: p10.eye(3), np.eye(3, dtype="f4")),
        (lambda: p10.eye(2, 4, k=1, dtype="int64"), np.eye(2, 4, k=1, dtype="i8")),
        (lambda: p10.zeros(()), np.zeros((), "f4")),
    ],
)
def test_creation_functions_match_numpy(call, expected):
    out = call()
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_creation_errors_name_the_function():
    with pytest.raises(p10.ShapeError, match=r"zeros: negative size in shape \(2, -1\)"):
        p10.zeros((2, -1))
    with pytest.raises(p10.ShapeError, match="ones: shape must be an int or a tuple of ints"):
        p10.ones((2.5,))
    with pytest.raises(p10.ArgumentError, match="arange: step must not be zero"):
        p10.arange(0, 3, 0)
    with pytest.raises(p10.DTypeError, match="dtype 'float16' is not supported"):
        p10.zeros(2, dtype="float16")
    with pytest.raises(p10.DTypeError, match="asarray: dtype <U1 is not supported"):
        p10.asarray(["a"])
    with pytest.raises(p10.ShapeError, match="asarray: cannot make a tensor from list"):
        p10.asarray([[1, 2], [3]])
    with pytest.raises(p10.DTypeError, match=r"from_numpy: expected a numpy\.ndarray"):
        p10.from_numpy([1, 2])


def test_finfo_iinfo_isdtype_can_cast():
    assert p10.finfo(p10.float32).eps == np.finfo(np.float32).eps
    assert p10.finfo("float64").bits == 64 and p10.finfo(p10.float32).max > 3e38
    assert (p10.iinfo(p10.int8).min, p10.iinfo("uint8").max) == (-128, 255)
    assert p10.isdtype(p10.float32, "real floating") and p10.isdtype(p10.uint8, "integral")
    assert p10.isdtype(p10.int8, ("bool", "signed integer")) and p10.isdtype(p10.bool, "bool")
    assert p10.isdtype(p10.int8, "numeric") and p10.isdtype(p10.int64, p10.int64)
    assert p10.can_cast(p10.int8, p10.int16) and not p10.can_cast(p10.float64, p10.float32)
    assert not p10.isdtype(p10.float64, "complex floating")
    with pytest.raises(p10.DTypeError, match="unknown kind"):
        p10.isdtype(p10.int8, "complex")
    assert p10.finfo("complex128").bits == 64  # a complex dtype reports its parts' limits
    assert p10.finfo(p10.complex64).eps == np.finfo(np.float32).eps


def test_result_type_of_python_scalars_alone():
    assert p10.result_type(1, 2) == p10.int64 and p10.result_type(1.0, 2) == p10.float32
    assert p10.result_type(True) == p10.bool and p10.result_type(True, 2.5) == p10.float32
    with pytest.raises(p10.DTypeError):
        p10.result_type()


def test_default_dtype_setting():
    assert p10.get_default_dtype() == p10.float32
    p10.set_default_dtype("float64")
    try:
        assert p10.asarray([1.5]).dtype == p10.float64 and p10.zeros(2).dtype == p10.float64
        assert p10.randn(2).dtype == p10.float64 and p10.arange(0.0, 1.0).dtype == p10.float64
        assert p10.mean(p10.arange(3)).dtype == p10.float64
    finally:
        p10.set_default_dtype("float32")
    with p10.default_dtype(p10.float64):
        assert p10.ones(1).dtype == p10.float64
    assert p10.ones(1).dtype == p10.float32
    with pytest.raises(p10.DTypeError, match="not floating"):
        p10.set_default_dtype("int32")


def test_default_dtype_is_per_thread():
    seen = []
    with p10.default_dtype("float64"):
        thread = threading.Thread(target=lambda: seen.append(p10.get_default_dtype()))
        thread.start()
        thread.join()
    assert seen == [p10.float32]


# -- random ------------------------------------------------------------------------------------
RANDOM_CALLS = {
    "rand": lambda g: g.rand((3, 2)),
    "randn": lambda g: g.randn(4),
    "randint": lambda g: g.randint(0, 10, (5,)),
    "normal": lambda g: g.normal(1.0, 2.0, (3,)),
    "uniform": lambda g: g.uniform(-1.0, 1.0, (2, 2)),
    "permutation": lambda g: g.permutation(6),
    "bernoulli": lambda g: g.bernoulli(0.5, (6,)),
}


@pytest.mark.parametrize("name", RANDOM_CALLS)
def test_generators_with_one_seed_give_the_same_numbers(name):
    call = RANDOM_CALLS[name]
    a, b = call(p10.random.Generator(42)), call(p10.random.Generator(42))
    assert a.tolist() == b.tolist() and a.dtype == b.dtype
    assert call(p10.random.Generator(43)).tolist() != a.tolist()


def test_manual_seed_resets_the_default_generator():
    p10.manual_seed(5)
    first = [p10.rand(3).tolist(), p10.randn(2).tolist(), p10.randint(0, 9, (3,)).tolist()]
    first += [p10.normal(0.0, 1.0, (2,)).tolist(), p10.uniform(0.0, 1.0, (2,)).tolist()]
    p10.manual_seed(5)
    again = [p10.rand(3).tolist(), p10.randn(2).tolist(), p10.randint(0, 9, (3,)).tolist()]
    again += [p10.normal(0.0, 1.0, (2,)).tolist(), p10.uniform(0.0, 1.0, (2,)).tolist()]
    assert first == again


def test_random_dtypes_ranges_and_statistics():
    g = p10.random.Generator(0)
    assert g.rand(2).dtype == p10.float32 and g.randn(2, dtype="float64").dtype == p10.float64
    assert g.randint(0, 3, (2,)).dtype == p10.int64
    u = g.uniform(2.0, 3.0, (1000,)).numpy()
    assert u.min() >= 2.0 and u.max() < 3.0
    n = g.normal(5.0, 2.0, (20000,)).numpy()
    assert abs(n.mean() - 5.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    assert sorted(g.permutation(5).tolist()) == [0, 1, 2, 3, 4]
    assert g.manual_seed(1).rand(2).tolist() == p10.random.Generator(1).rand(2).tolist()
