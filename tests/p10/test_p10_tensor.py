"""The Tensor object: in-place writes and the shared version counter, read-only exports, NumPy
and DLPack interop, repr, Python protocols, and the fast paths agreeing with the slow ones."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import p10
from p10._methods import TensorMethods


# -- in-place writes and versions ---------------------------------------------------------------
@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.__iadd__(1.0),
        lambda x: x.__isub__(p10.ones(3)),
        lambda x: x.__imul__(2),
        lambda x: x.__itruediv__(2.0),
        lambda x: x.add_(1.0),
        lambda x: x.mul_(p10.ones(3)),
        lambda x: x.sub_(1.0),
        lambda x: x.div_(4.0),
        lambda x: x.zero_(),
        lambda x: x.fill_(3.0),
        lambda x: x.copy_(p10.asarray([1.0, 2.0, 3.0])),
        lambda x: x.__setitem__(0, 5.0),
        lambda x: x.__setitem__(slice(None), p10.zeros(3)),
    ],
    ids=["iadd", "isub", "imul", "itruediv", "add_", "mul_", "sub_", "div_", "zero_", "fill_"]
    + ["copy_", "setitem", "setitem-slice"],
)
def test_every_in_place_write_bumps_the_version_of_every_view(write):
    base = p10.asarray([[1.0, 2.0, 3.0]])
    row = base[0]
    views = [base.reshape(3), base.T, base.permute(1, 0), row, base[:, ::-1], p10.flip(base)]
    out = write(row)
    assert out is row or out is None
    assert base.version == 1 and all(v.version == 1 for v in views)
    np.testing.assert_array_equal(views[0].numpy(), base.numpy()[0])


def test_in_place_result_must_keep_shape_and_dtype():
    x = p10.zeros((2, 3))
    with pytest.raises(p10.ShapeError, match=r"in-place op: result of shape \(2, 2, 3\)"):
        x += p10.zeros((2, 1, 3))
    i = p10.zeros(3, dtype="int64")
    with pytest.raises(
        p10.DTypeError, match="cannot store float32 values into a tensor of dtype int64"
    ):
        i += 0.5
    assert x.version == 0 and i.version == 0
    i += 2  # same kind is fine
    assert i.tolist() == [2, 2, 2] and i.version == 1


def test_out_of_place_results_and_copies_have_their_own_version():
    x = p10.ones(3)
    y, c, gathered = x + 1, x.copy(), x[p10.asarray([0, 1])]
    x += 1
    assert (y.version, c.version, gathered.version) == (0, 0, 0)
    assert c.tolist() == [1.0, 1.0, 1.0] and gathered.tolist() == [1.0, 1.0]


def test_writes_through_a_broadcast_view_are_refused():
    x = p10.ones(3)
    b = p10.broadcast_to(x, (2, 3))
    with pytest.raises(p10.ShapeError, match="read-only"):
        b[0, 0] = 5.0


def test_from_numpy_shares_memory_and_asarray_copies():
    a = np.zeros(3, np.float32)
    shared, copied = p10.from_numpy(a), p10.asarray(a)
    a[0] = 1.0
    assert shared.tolist() == [1.0, 0.0, 0.0] and copied.tolist() == [0.0, 0.0, 0.0]
    assert p10.asarray(shared) is shared and p10.asarray(shared, copy=True) is not shared
    assert p10.tensor(shared) is not shared


# -- read-only exports and interop ---------------------------------------------------------------
def test_numpy_and_asarray_are_read_only_views():
    x = p10.asarray([1.0, 2.0])
    for exported in (x.numpy(), np.asarray(x)):
        assert not exported.flags.writeable and np.shares_memory(exported, x.numpy())
        with pytest.raises(ValueError, match="read-only"):
            exported[0] = 5.0
    writable = np.array(x)
    writable[0] = 5.0
    assert x.tolist() == [1.0, 2.0]
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert np.concatenate([x, x]).tolist() == [1.0, 2.0, 1.0, 2.0]  # read as an array


def test_dlpack_round_trip():
    x = p10.asarray([[1.0, 2.0], [3.0, 4.0]])
    a = np.from_dlpack(x)
    assert np.shares_memory(a, x.numpy()) and not a.flags.writeable
    np.testing.assert_array_equal(a, x.numpy())
    assert x.__dlpack_device__() == (1, 0)
    legacy = x.__dlpack__()  # consumers without a version get a copy, never a writable alias
    assert legacy is not None
    back = p10.from_dlpack(np.arange(3.0))
    assert back.tolist() == [0.0, 1.0, 2.0] and back.dtype == p10.float64
    round_trip = p10.from_dlpack(x)
    assert round_trip.tolist() == x.tolist() and round_trip.dtype == x.dtype


REPRS = [
    (p10.asarray([1.0, 2.5]), "tensor([1. , 2.5], dtype=float32)"),
    (p10.asarray([1, 2]), "tensor([1, 2])"),
    (p10.asarray(3.0), "tensor(3., dtype=float32)"),
    (p10.asarray([True, False]), "tensor([ True, False])"),
    (p10.zeros((0,)), "tensor([], dtype=float32)"),
    (p10.zeros((0, 3), dtype="int8"), "tensor([], shape=(0, 3), dtype=int8)"),
    (p10.asarray([[1.0, 2.0], [3.0, 4.0]], dtype="float64"), None),
]


@pytest.mark.parametrize("x, text", REPRS, ids=[r for _, r in REPRS])
def test_repr_reads_like_numpy(x, text):
    if text is None:
        assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]], dtype=float64)"
    else:
        assert repr(x) == text
    assert str(x) == repr(x)


def test_array_namespace_and_python_protocols():
    x = p10.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert x.__array_namespace__() is p10 and p10.__array_api_version__ == "2024.12"
    assert x.__array_namespace__(api_version="2024.12") is p10
    with pytest.raises(p10.ArgumentError, match=r"api_version '2019\.01'"):
        x.__array_namespace__(api_version="2019.01")
    assert len(x) == 2 and [r.tolist() for r in x] == [[1.0, 2.0], [3.0, 4.0]]
    assert x[0, 1].item() == 2.0 and isinstance(x[0, 1].item(), float)
    assert float(x[1, 1]) == 4.0 and int(p10.asarray(7)) == 7 and bool(p10.asarray([True]))
    assert [10, 20, 30][p10.asarray(1)] == 20
    assert x.shape == (2, 2) and x.ndim == 2 and x.size == 4 and x.device == "cpu"
    assert {x: 1}[x] == 1  # hashable by identity despite elementwise ==
    with pytest.raises(TypeError, match="0-d"):
        len(p10.asarray(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(p10.asarray(1.0))
    with pytest.raises(p10.ShapeError, match=r"item: tensor of shape \(2, 2\) has 4 elements"):
        x.item()
    with pytest.raises(ValueError):
        bool(x)
    with pytest.raises(TypeError, match="integer tensors"):
        [1, 2][p10.asarray(1.0)]


def test_astype_copy_and_conversions():
    x = p10.asarray([1.7, -2.2])
    assert x.astype("int32").tolist() == [1, -2] and x.astype(p10.int32).dtype == p10.int32
    assert x.astype("float32", copy=False) is x and x.astype("float32") is not x
    assert x.double().dtype == p10.float64 and x.long().dtype == p10.int64
    assert x.float() is x and x.to() is x
    assert x.clone().tolist() == x.tolist() and x.to("float64").dtype == p10.float64
    assert p10.asarray([0.0, 2.0]).astype("bool").tolist() == [False, True]


# -- fast paths ---------------------------------------------------------------------------------
BINARY_FAST = ["__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__matmul__"]
BINARY_FAST += ["matmul", "maximum", "minimum", "__eq__", "__ne__", "__lt__", "__le__"]
BINARY_FAST += ["__gt__", "__ge__", "__radd__", "__rsub__", "__rmul__", "__rtruediv__"]
INPLACE_FAST = ["__iadd__", "__isub__", "__imul__", "__itruediv__", "add_", "sub_", "mul_", "div_"]
UNARY_FAST = ["__neg__", "neg", "__abs__", "abs", "relu", "square", "exp", "log", "sqrt"]
UNARY_FAST += ["sin", "cos", "tanh", "sigmoid"]
REDUCE_FAST = ["sum", "mean", "max", "min"]
OPERANDS = [
    (np.full((2, 2), 1.5, "f4"), np.full((2, 2), 2.0, "f4")),
    (np.arange(4).reshape(2, 2), np.arange(1, 5).reshape(2, 2)),
    (np.arange(4, dtype="int8").reshape(2, 2), np.ones((2, 2), "float32")),
    (np.array([[True, False]]), np.array([[True], [True]])),
    (np.ones((2, 2), "f8"), 2.5),
    (np.ones((2, 3), "f4"), np.ones((4, 3), "f4")),
    # weak Python scalars: the float keeps the tensor's dtype, bools and ints meet int tensors
    (np.linspace(-1, 1, 4, dtype="f4").reshape(2, 2), 0.1),
    (np.linspace(-1, 1, 4, dtype="f4").reshape(2, 2), 3),
    (np.array(1.5, "f4"), -2.0),
    (np.array([[0.0, 2.0]], "f4"), 0),
    (np.arange(4, dtype="int8"), 300),
    (np.arange(4, dtype="int32"), 2.5),
    (np.ones(3, "f4"), True),
    (np.ones((2, 3), "f4"), np.ones(3, "f4")),
    (np.ones(3, "f4"), np.ones((2, 3), "f4")),
    (np.ones(3, "f8"), np.ones(3, "f4")),
    (np.array([True, False, True]), np.array([0.5, 2.0, -1.0], "f4")),
    (np.array([[0.5], [-3.0]]), np.array([True, False])),
    (np.array([True, False]), np.array([1, 2], "int8")),
]


def _outcome(fn, *args):
    try:
        out = fn(*args)
    except Exception as e:
        return type(e), str(e).split(" (")[0]
    if not isinstance(out, p10.Tensor):
        return type(out)  # NotImplemented
    return out.dtype, out.shape, repr(out.numpy().tolist())  # repr: NaN equals NaN


@pytest.mark.parametrize("name", BINARY_FAST)
@pytest.mark.parametrize("pair", range(len(OPERANDS)))
def test_binary_fast_paths_agree_with_the_shared_methods(name, pair):
    a, b = OPERANDS[pair]
    x = p10.asarray(a)
    y = p10.asarray(b) if isinstance(b, np.ndarray) else b
    with np.errstate(all="ignore"):
        fast = _outcome(getattr(p10.Tensor, name), x, y)
        slow = _outcome(getattr(TensorMethods, name), x, y)
    assert fast == slow


@pytest.mark.parametrize("name", INPLACE_FAST)
@pytest.mark.parametrize("pair", range(len(OPERANDS)))
def test_in_place_fast_paths_agree_with_the_shared_methods(name, pair):
    """The backend's in-place kernels write what computing out of place and copying writes,
    and refuse (with the general path's error, nothing written) what that refuses."""
    a, b = OPERANDS[pair]
    outcomes = []
    for method in (getattr(p10.Tensor, name), getattr(TensorMethods, name)):
        x = p10.asarray(a)
        y = p10.asarray(b) if isinstance(b, np.ndarray) else b
        view = x.reshape(-1)
        with np.errstate(all="ignore"):
            result = _outcome(method, x, y)
        outcomes.append((result, x.version, view.version, repr(x.numpy().tolist())))
    assert outcomes[0] == outcomes[1]


def test_in_place_fast_path_handles_overlap_and_read_only_memory():
    x = p10.asarray([1.0, 2.0, 3.0, 4.0])
    x -= x[::-1]  # the operand overlaps the destination: NumPy copies it first
    assert x.tolist() == [-3.0, -1.0, 1.0, 3.0] and x.version == 1
    frozen = np.ones(3, "f4")
    frozen.flags.writeable = False
    t = p10.from_numpy(frozen)
    with pytest.raises(p10.ShapeError, match="read-only"):
        t += 1.0
    assert t.version == 0 and frozen.tolist() == [1.0, 1.0, 1.0]


def test_backends_without_in_place_kernels_compute_and_copy(subset_backend):
    x = p10.asarray([1.0, 2.0], backend=subset_backend)
    assert not x.backend.inplace
    x += 1.0
    assert x.tolist() == [2.0, 3.0] and x.version == 1


@pytest.mark.parametrize("name", UNARY_FAST)
@pytest.mark.parametrize("a", [np.array([[0.5, -2.0]], "f4"), np.array([1, -2]), np.array(True)])
def test_unary_fast_paths_agree_with_the_shared_methods(name, a):
    x = p10.asarray(a)
    with np.errstate(all="ignore"):
        assert _outcome(getattr(p10.Tensor, name), x) == _outcome(getattr(TensorMethods, name), x)


@pytest.mark.parametrize("name", REDUCE_FAST)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1), 2, "x"], ids=str)
@pytest.mark.parametrize(
    "a",
    [np.arange(6.0, dtype="f4").reshape(2, 3), np.arange(6), np.zeros((0, 2)), np.array(1.5)],
)
def test_reduction_fast_paths_agree_with_the_shared_methods(name, axis, a):
    x = p10.asarray(a)
    with np.errstate(all="ignore"), _ignore_runtime_warnings():
        fast = _outcome(getattr(p10.Tensor, name), x, axis, True)
        slow = _outcome(getattr(TensorMethods, name), x, axis, True)
    assert fast == slow


@contextlib.contextmanager
def _ignore_runtime_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def test_fast_path_errors_name_op_and_shapes():
    x, y = p10.ones((2, 3)), p10.ones((4, 3))
    with pytest.raises(p10.ShapeError, match=r"add: inputs \(2, 3\) float32, \(4, 3\) float32"):
        x + y
    with pytest.raises(
        p10.ShapeError, match=r"matmul: inner dimensions differ: \(2, 3\) @ \(4, 3\)"
    ):
        x @ y
    with pytest.raises(p10.ArgumentError, match=r"pow: inputs \(2,\) int64, \(2,\) int64"):
        p10.asarray([2, 3]) ** p10.asarray([-1, 2])
    with pytest.raises(p10.ShapeError, match=r"max: cannot reduce an empty axis"):
        p10.zeros((0, 2)).max()
