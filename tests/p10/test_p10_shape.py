"""Shape manipulation and linear algebra against NumPy, including negative axes, empty and 0-d
tensors, and matmul's 1-D and batch broadcasting rules."""

from __future__ import annotations

import numpy as np
import pytest

import p10
from tests.helpers.p10_cases import assert_same_array

rng = np.random.default_rng(11)
X = rng.standard_normal((2, 3, 4)).astype(np.float32)


def t(a):
    return p10.asarray(a)


# (p10 call, NumPy call) on X
SHAPE_CALLS = {
    "reshape": (lambda x: p10.reshape(x, (4, -1)), lambda a: a.reshape(4, -1)),
    "reshape-method-args": (lambda x: x.reshape(6, 4), lambda a: a.reshape(6, 4)),
    "view": (lambda x: x.view(-1), lambda a: a.reshape(-1)),
    "flatten": (lambda x: p10.flatten(x), lambda a: a.reshape(-1)),
    "flatten-1": (lambda x: x.flatten(1), lambda a: a.reshape(2, 12)),
    "flatten-0-1": (lambda x: p10.flatten(x, 0, -2), lambda a: a.reshape(6, 4)),
    "squeeze": (lambda x: p10.squeeze(x[:, :1]), lambda a: a[:, :1].squeeze()),
    "squeeze-axis": (lambda x: p10.squeeze(x[:1], axis=0), lambda a: a[0]),
    "expand_dims": (lambda x: p10.expand_dims(x, axis=-1), lambda a: a[..., None]),
    "unsqueeze": (lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    "broadcast_to": (
        lambda x: p10.broadcast_to(x, (5, 2, 3, 4)),
        lambda a: np.broadcast_to(a, (5, 2, 3, 4)),
    ),
    "expand": (
        lambda x: x[:, :1].expand(-1, 3, -1),
        lambda a: np.broadcast_to(a[:, :1], (2, 3, 4)),
    ),
    "permute_dims": (lambda x: p10.permute_dims(x, (2, 0, 1)), lambda a: a.transpose(2, 0, 1)),
    "permute-neg": (lambda x: x.permute(-1, 0, -2), lambda a: a.transpose(2, 0, 1)),
    "T": (lambda x: x[0].T, lambda a: a[0].T),
    "mT": (lambda x: x.mT, lambda a: np.swapaxes(a, -1, -2)),
    "matrix_transpose": (lambda x: p10.matrix_transpose(x), lambda a: np.swapaxes(a, -1, -2)),
    "transpose": (lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    "swapaxes": (lambda x: p10.swapaxes(x, -1, 0), lambda a: np.swapaxes(a, -1, 0)),
    "flip": (lambda x: p10.flip(x, axis=-1), lambda a: a[..., ::-1]),
    "flip-all": (lambda x: p10.flip(x), lambda a: np.flip(a)),
    "flip-tuple": (lambda x: x.flip((0, 2)), lambda a: np.flip(a, (0, 2))),
    "tile": (lambda x: p10.tile(x, (2, 1, 1)), lambda a: np.tile(a, (2, 1, 1))),
    "tile-short": (lambda x: x.tile((2,)), lambda a: np.tile(a, 2)),
    "repeat": (lambda x: p10.repeat(x, 2, axis=-1), lambda a: np.repeat(a, 2, axis=-1)),
    "repeat-flat": (lambda x: x.repeat(2), lambda a: np.repeat(a, 2)),
    "pad": (
        lambda x: p10.pad(x, ((0, 0), (1, 2), (0, 1)), value=-1.0),
        lambda a: np.pad(a, ((0, 0), (1, 2), (0, 1)), constant_values=-1.0),
    ),
    "pad-int": (lambda x: p10.pad(x, 1), lambda a: np.pad(a, 1)),
    "concat": (
        lambda x: p10.concat([x, x[:, :1]], axis=1),
        lambda a: np.concatenate([a, a[:, :1]], axis=1),
    ),
    "concat-neg": (
        lambda x: p10.concat([x, x], axis=-1),
        lambda a: np.concatenate([a, a], axis=-1),
    ),
    "concat-none": (
        lambda x: p10.concat([x, x[0]], axis=None),
        lambda a: np.concatenate([a.ravel(), a[0].ravel()]),
    ),
    "stack": (lambda x: p10.stack([x, x + 1], axis=-1), lambda a: np.stack([a, a + 1], axis=-1)),
    "stack-0": (lambda x: p10.stack((x[0], x[1])), lambda a: np.stack([a[0], a[1]])),
}


@pytest.mark.parametrize("name", SHAPE_CALLS)
def test_shape_op_matches_numpy(name):
    ours, theirs = SHAPE_CALLS[name]
    assert_same_array(ours(t(X)).numpy(), theirs(X), name)


def test_split():
    parts = p10.split(t(X), 2, axis=-1)
    for got, want in zip(parts, np.split(X, 2, axis=-1)):
        assert_same_array(got.numpy(), want)
    parts = p10.split(t(X), [1, 3], axis=2)
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    with pytest.raises(p10.ShapeError, match="does not split into 3 equal"):
        p10.split(t(X), 3, axis=-1)


def test_empty_and_0d_shapes():
    e = p10.zeros((0, 3))
    assert p10.reshape(e, (3, 0, 1)).shape == (3, 0, 1) and e.reshape(-1, 3).shape == (0, 3)
    assert p10.concat([e, p10.ones((2, 3))]).shape == (2, 3)
    assert p10.stack([e, e]).shape == (2, 0, 3)
    assert e.T.shape == (3, 0) and p10.flip(e).shape == (0, 3)
    s = p10.asarray(3.0)
    assert s.reshape((1, 1)).shape == (1, 1) and p10.flatten(s).shape == (1,)
    assert p10.expand_dims(s, axis=0).shape == (1,) and p10.squeeze(s).shape == ()
    assert p10.broadcast_to(s, (2, 2)).tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert p10.stack([s, s]).tolist() == [3.0, 3.0]
    assert s.T.shape == () and p10.permute_dims(s, ()).shape == ()


def test_broadcast_shapes():
    assert p10.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    assert p10.broadcast_shapes((0, 1), (1, 5)) == (0, 5)
    assert p10.broadcast_shapes() == ()
    with pytest.raises(p10.ShapeError, match=r"\(2, 3\), \(4,\) do not broadcast: axis -1"):
        p10.broadcast_shapes((2, 3), (4,))


# -- linear algebra -----------------------------------------------------------------------------
MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
    ((4,), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((0, 3, 4), (4, 2)),
    ((3, 0), (0, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_shapes_like_numpy(shapes):
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    for out in [p10.matmul(t(a), t(b)), t(a) @ t(b), t(a).matmul(t(b)), a @ t(b), t(a) @ b]:
        assert_same_array(out.numpy(), np.asarray(a @ b), str(shapes))


def test_matmul_int_and_float64():
    a, b = np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)
    assert_same_array((t(a) @ t(b)).numpy(), a @ b)
    assert_same_array((t(a.astype("f8")) @ t(b.astype("f8"))).numpy(), a.astype("f8") @ b)


def test_tensordot_outer_einsum_vecdot():
    a, b = X, rng.standard_normal((4, 3, 5)).astype(np.float32)
    for axes in [1, 0, ((1, 2), (1, 0)), ([-1], [0])]:
        want = np.tensordot(a, b, axes=axes)
        assert_same_array(p10.tensordot(t(a), t(b), axes=axes).numpy(), want, str(axes))
    u, v = X[0, 0], X[1, 1, :3]
    assert_same_array(p10.outer(t(u), t(v)).numpy(), np.outer(u, v))
    assert_same_array(
        p10.einsum("bij,jk->bik", t(X), t(b[:, 0])).numpy(), np.einsum("bij,jk->bik", X, b[:, 0])
    )
    assert_same_array(
        p10.einsum("ii->i", t(X[0, :3, :3])).numpy(), np.einsum("ii->i", X[0, :3, :3])
    )
    assert_same_array(p10.vecdot(t(X), t(X[0, 0])).numpy(), np.sum(X * X[0, 0], axis=-1))
    assert_same_array(p10.vecdot(t(X), t(X), axis=0).numpy(), np.sum(X * X, axis=0))
