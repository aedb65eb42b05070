"""Every bad input raises a P10 error that is also the builtin a user would catch, and whose
message names the op, the shapes or dtypes, and what to do."""

from __future__ import annotations

import numpy as np
import pytest

import p10

x23, x43 = p10.ones((2, 3)), p10.ones((4, 3))
i3 = p10.arange(3)

# id: (call, P10 class, builtin class, substrings the message must contain)
BAD_INPUTS = {
    "broadcast-function": (
        lambda: p10.add(x23, x43),
        p10.ShapeError,
        ValueError,
        ["add", "(2, 3) float32", "(4, 3) float32", "broadcast", "unsqueeze"],
    ),
    "broadcast-operator": (
        lambda: x23 * x43,
        p10.ShapeError,
        ValueError,
        ["mul", "(2, 3)", "(4, 3)"],
    ),
    "broadcast-int-float": (
        lambda: p10.arange(4) - x23,
        p10.ShapeError,
        ValueError,
        ["sub", "(4,)", "(2, 3)"],
    ),
    "broadcast-where": (
        lambda: p10.where(x23 > 0, x23, x43),
        p10.ShapeError,
        ValueError,
        ["where", "(2, 3)", "(4, 3)"],
    ),
    "broadcast_to": (
        lambda: p10.broadcast_to(x23, (3, 3)),
        p10.ShapeError,
        ValueError,
        ["broadcast_to", "(2, 3)", "(3, 3)"],
    ),
    "broadcast_shapes": (
        lambda: p10.broadcast_shapes((2,), (3,)),
        p10.ShapeError,
        ValueError,
        ["(2,), (3,)", "axis -1"],
    ),
    "matmul-inner": (
        lambda: x23 @ x43,
        p10.ShapeError,
        ValueError,
        ["matmul", "(2, 3) @ (4, 3)", "3 != 4", ".mT"],
    ),
    "matmul-vector": (
        lambda: p10.matmul(p10.ones(2), x23.mT),
        p10.ShapeError,
        ValueError,
        ["matmul", "(2,) @ (3, 2)"],
    ),
    "matmul-0d": (
        lambda: p10.matmul(p10.asarray(1.0), x23),
        p10.ShapeError,
        ValueError,
        ["matmul", "at least 1-D", "multiply"],
    ),
    "matmul-batch": (
        lambda: p10.ones((2, 3, 4)) @ p10.ones((5, 4, 2)),
        p10.ShapeError,
        ValueError,
        ["matmul", "batch", "(2,)", "(5,)"],
    ),
    "tensordot": (
        lambda: p10.tensordot(x23, x43, axes=1),
        p10.ShapeError,
        ValueError,
        ["tensordot", "(2, 3)", "(4, 3)"],
    ),
    "outer": (lambda: p10.outer(x23, i3), p10.ShapeError, ValueError, ["outer", "1-D", "(2, 3)"]),
    "reshape": (
        lambda: x23.reshape(4, 2),
        p10.ShapeError,
        ValueError,
        ["reshape", "(2, 3)", "6 elements", "(4, 2)", "8 elements"],
    ),
    "reshape-infer": (
        lambda: x23.reshape(4, -1),
        p10.ShapeError,
        ValueError,
        ["reshape", "-1", "(2, 3)"],
    ),
    "reshape-two-unknowns": (
        lambda: x23.reshape(-1, -1),
        p10.ShapeError,
        ValueError,
        ["reshape", "one -1"],
    ),
    "squeeze": (
        lambda: p10.squeeze(x23, axis=1),
        p10.ShapeError,
        ValueError,
        ["squeeze", "axis 1", "(2, 3)", "not 1"],
    ),
    "concat": (
        lambda: p10.concat([x23, p10.ones((2, 2))], axis=0),
        p10.ShapeError,
        ValueError,
        ["concat", "(2, 3), (2, 2)", "axis 0"],
    ),
    "concat-0d": (
        lambda: p10.concat([p10.asarray(1.0)] * 2),
        p10.ShapeError,
        ValueError,
        ["concat", "0-d", "stack"],
    ),
    "concat-empty-list": (
        lambda: p10.concat([]),
        p10.ArgumentError,
        ValueError,
        ["concat", "non-empty"],
    ),
    "stack": (
        lambda: p10.stack([x23, x43]),
        p10.ShapeError,
        ValueError,
        ["stack", "(2, 3)", "(4, 3)"],
    ),
    "split": (
        lambda: p10.split(x23, 2, axis=1),
        p10.ShapeError,
        ValueError,
        ["split", "axis 1 of size 3", "2 equal"],
    ),
    "permute": (
        lambda: p10.permute_dims(x23, (0, 0)),
        p10.ShapeError,
        ValueError,
        ["permute_dims", "(0, 0)", "permutation"],
    ),
    "pad": (lambda: p10.pad(x23, ((1, 1),)), p10.ShapeError, ValueError, ["pad", "(2, 3)"]),
    "item": (lambda: x23.item(), p10.ShapeError, ValueError, ["item", "(2, 3)", "6 elements"]),
    "inplace-shape": (
        lambda: x23.__iadd__(p10.ones((3, 2, 3))),
        p10.ShapeError,
        ValueError,
        ["in-place", "(3, 2, 3)", "(2, 3)"],
    ),
    "axis-sum": (
        lambda: p10.sum(x23, axis=2),
        p10.AxisError,
        IndexError,
        ["sum", "axis 2", "2 dimension", "[-2, 2)"],
    ),
    "axis-negative": (lambda: x23.mean(axis=-3), p10.AxisError, IndexError, ["mean", "axis -3"]),
    "axis-repeated": (
        lambda: p10.sum(x23, axis=(1, -1)),
        p10.AxisError,
        IndexError,
        ["sum", "repeated axis"],
    ),
    "axis-type": (
        lambda: p10.max(x23, axis=1.0),
        p10.AxisError,
        IndexError,
        ["max", "axis must be an int"],
    ),
    "axis-expand_dims": (
        lambda: p10.expand_dims(x23, axis=4),
        p10.AxisError,
        IndexError,
        ["expand_dims", "axis 4"],
    ),
    "axis-concat": (
        lambda: p10.concat([x23, x23], axis=2),
        p10.AxisError,
        IndexError,
        ["concat", "axis 2"],
    ),
    "axis-argmax": (
        lambda: p10.argmax(x23, axis=5),
        p10.AxisError,
        IndexError,
        ["argmax", "axis 5"],
    ),
    "axis-flip": (lambda: p10.flip(x23, axis=3), p10.AxisError, IndexError, ["flip", "axis 3"]),
    "axis-softmax": (
        lambda: p10.softmax(x23, axis=-3),
        p10.AxisError,
        IndexError,
        ["softmax", "axis -3"],
    ),
    "dtype-bitwise-float": (
        lambda: p10.bitwise_and(x23, x23),
        p10.DTypeError,
        TypeError,
        ["bitwise_and", "(2, 3) float32", "dtypes", "astype"],
    ),
    "dtype-invert-float": (lambda: ~x23, p10.DTypeError, TypeError, ["bitwise_invert", "float32"]),
    "dtype-where-condition": (
        lambda: p10.where(i3, i3, i3),
        p10.DTypeError,
        TypeError,
        ["where", "condition must be bool", "int64"],
    ),
    "dtype-scalar-overflow": (
        lambda: p10.ones(2, dtype="int8") + 1000,
        p10.DTypeError,
        TypeError,
        ["1000", "int8", "astype"],
    ),
    "dtype-unsigned-negative": (
        lambda: p10.ones(2, dtype="uint8") * -1,
        p10.DTypeError,
        TypeError,
        ["-1", "uint8"],
    ),
    "dtype-not-supported": (
        lambda: p10.zeros(2, dtype="float16"),
        p10.DTypeError,
        TypeError,
        ["float16", "not supported", "float32"],
    ),
    "dtype-unsupported-data": (
        lambda: p10.asarray(np.array([1.0], dtype=np.float16)),
        p10.DTypeError,
        TypeError,
        ["asarray", "float16"],
    ),
    "dtype-inplace-store": (
        lambda: i3.__iadd__(0.5),
        p10.DTypeError,
        TypeError,
        ["in-place", "float32", "dtype int64", "out of place"],
    ),
    "dtype-index-float": (
        lambda: x23[p10.ones(2)],
        p10.DTypeError,
        TypeError,
        ["getitem", "integer or bool", "float32"],
    ),
    "dtype-default": (
        lambda: p10.set_default_dtype("int8"),
        p10.DTypeError,
        TypeError,
        ["set_default_dtype", "int8", "float32 or float64"],
    ),
    "dtype-non-tensor": (
        lambda: p10.apply(p10.Op.NEG, [1.0]),
        p10.DTypeError,
        TypeError,
        ["neg", "expected tensors", "list"],
    ),
    "index-int": (
        lambda: x23[2],
        p10.IndexOutOfRangeError,
        IndexError,
        ["getitem", "index 2", "axis 0 of size 2", "(2, 3)", "-2..1"],
    ),
    "index-negative": (
        lambda: x23[:, -4],
        p10.IndexOutOfRangeError,
        IndexError,
        ["getitem", "index -4", "axis 1 of size 3"],
    ),
    "index-too-many": (
        lambda: x23[0, 0, 0],
        p10.IndexOutOfRangeError,
        IndexError,
        ["too many indices", "(2, 3)"],
    ),
    "index-gather": (
        lambda: x23[p10.asarray([0, 5])],
        p10.IndexOutOfRangeError,
        IndexError,
        ["getitem", "(2, 3) float32", "index 5"],
    ),
    "index-take": (
        lambda: p10.take(x23, [3], axis=1),
        p10.IndexOutOfRangeError,
        IndexError,
        ["getitem", "index 3"],
    ),
    "index-setitem": (
        lambda: x23.__setitem__(7, 1.0),
        p10.IndexOutOfRangeError,
        IndexError,
        ["setitem", "index 7", "(2, 3)"],
    ),
    "index-take-along-rank": (
        lambda: p10.take_along_axis(x23, i3),
        p10.IndexOutOfRangeError,
        IndexError,
        ["take_along_axis", "(3,)", "(2, 3)"],
    ),
    "unknown-backend": (
        lambda: p10.ones(2, backend="tpu9000"),
        p10.BackendError,
        ValueError,
        ["unknown backend 'tpu9000'", "numpy", "register_backend"],
    ),
    "unknown-backend-context": (
        lambda: p10.use_backend("nope").__enter__(),
        p10.BackendError,
        ValueError,
        ["unknown backend 'nope'"],
    ),
    "argument-arange": (
        lambda: p10.arange(0, 5, 0),
        p10.ArgumentError,
        ValueError,
        ["arange", "step"],
    ),
    "argument-gelu": (
        lambda: p10.gelu(x23, approximate="fast"),
        p10.ArgumentError,
        ValueError,
        ["gelu", "'fast'", "tanh"],
    ),
    "argument-repeat": (
        lambda: p10.repeat(x23, -1),
        p10.ArgumentError,
        ValueError,
        ["repeat", "-1"],
    ),
    "argument-einsum": (
        lambda: p10.einsum("ij,jk", x23, x23),
        p10.ArgumentError,
        ValueError,
        ["einsum", "->"],
    ),
    "argument-einsum-count": (
        lambda: p10.einsum("ij->i", x23, x23),
        p10.ArgumentError,
        ValueError,
        ["einsum", "names 1 operands, got 2"],
    ),
    "argument-int-negative-power": (
        lambda: i3 ** p10.asarray([1, -1, 2]),
        p10.ArgumentError,
        ValueError,
        ["pow", "(3,) int64", "negative"],
    ),
    "argument-slice-step": (
        lambda: x23[::0],
        p10.ArgumentError,
        ValueError,
        ["getitem", "step cannot be zero"],
    ),
}


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_raises_a_named_error(name):
    call, p10_class, builtin, parts = BAD_INPUTS[name]
    with pytest.raises(p10_class) as info:
        call()
    assert isinstance(info.value, builtin) and isinstance(info.value, p10.P10Error)
    message = str(info.value)
    missing = [p for p in parts if p not in message]
    assert not missing, f"message {message!r} lacks {missing}"


def test_every_error_class_is_also_a_builtin():
    pairs = {
        p10.ShapeError: ValueError,
        p10.AxisError: IndexError,
        p10.DTypeError: TypeError,
        p10.IndexOutOfRangeError: IndexError,
        p10.ArgumentError: ValueError,
        p10.BackendError: ValueError,
        p10.MissingKernelError: NotImplementedError,
    }
    for cls, builtin in pairs.items():
        assert issubclass(cls, p10.P10Error) and issubclass(cls, builtin)


def test_errors_leave_tensors_untouched():
    x = p10.ones((2, 3))
    for call in (lambda: x.__iadd__(p10.ones(4)), lambda: x.__setitem__(9, 0.0)):
        with pytest.raises(p10.P10Error):
            call()
    assert x.version == 0 and x.tolist() == [[1.0] * 3] * 2
