"""Each layer: forward against a NumPy reference, gradients against finite differences (float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import erf

import p10
import tpx as tp
import tpx.nn as nn
from tests.helpers.nn_check import ModuleGradError, check_module_grads, f64

RNG = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def double(module: nn.Module, seed: int = 0) -> nn.Module:
    """``module`` in float64 with every parameter randomised (so ones/zeros hide nothing)."""
    module.double()
    rng = np.random.default_rng(seed)
    with tp.no_grad():
        for p in module.parameters():
            p.copy_(p10.asarray(rng.standard_normal(p.shape) * 0.5))
    return module


def out_np(module: nn.Module, *xs: tp.Tensor) -> np.ndarray:
    return np.asarray(module(*xs).numpy())


# -- Linear -----------------------------------------------------------------------------------
def test_linear_forward_and_grads():
    m = double(nn.Linear(4, 3))
    x = f64(randn(5, 4))
    w, b = m.weight.numpy(), m.bias.numpy()
    np.testing.assert_allclose(out_np(m, x), x.numpy() @ w.T + b, rtol=1e-12)
    check_module_grads(m, [x])


def test_linear_without_bias_on_3d_input():
    m = double(nn.Linear(4, 2, bias=False))
    x = f64(randn(2, 3, 4))
    np.testing.assert_allclose(out_np(m, x), x.numpy() @ m.weight.numpy().T, rtol=1e-12)
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    check_module_grads(m, [x])


def test_linear_default_init_is_pytorch_kaiming_uniform():
    p10.manual_seed(0)
    m = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = m.weight.numpy(), m.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound  # uniform(-b, b) has std b/sqrt(3)
    assert m.weight.dtype == np.float32


# -- Conv2d and pooling ----------------------------------------------------------------------
def conv_ref(x, w, b, stride, padding, groups=1):
    n, _c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg : (g + 1) * cg, i * stride : i * stride + kh]
                patch = patch[..., j * stride : j * stride + kw]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3)) + b[oc]
    return out


@pytest.mark.parametrize(
    ("stride", "padding", "groups"), [(1, 0, 1), (1, 1, 1), (2, 1, 1), (1, 1, 2)]
)
def test_conv2d_forward_and_grads(stride, padding, groups):
    m = double(nn.Conv2d(2, 4, 3, stride=stride, padding=padding, groups=groups))
    x = f64(randn(2, 2, 5, 5))
    ref = conv_ref(x.numpy(), m.weight.numpy(), m.bias.numpy(), stride, padding, groups)
    np.testing.assert_allclose(out_np(m, x), ref, rtol=1e-10, atol=1e-12)
    check_module_grads(m, [x])


def pool_ref(x, k, reduce):
    n, c, h, w = x.shape
    blocks = x[:, :, : h - h % k, : w - w % k].reshape(n, c, h // k, k, w // k, k)
    return reduce(blocks, axis=(3, 5))


def test_max_pool2d_forward_and_grads():
    x = f64(RNG.permutation(2 * 2 * 4 * 4).reshape(2, 2, 4, 4) / 7.0)  # no ties
    np.testing.assert_allclose(out_np(nn.MaxPool2d(2), x), pool_ref(x.numpy(), 2, np.max))
    check_module_grads(nn.MaxPool2d(2), [x])


def test_avg_pool2d_forward_and_grads():
    x = f64(randn(2, 3, 4, 6))
    np.testing.assert_allclose(out_np(nn.AvgPool2d(2), x), pool_ref(x.numpy(), 2, np.mean))
    check_module_grads(nn.AvgPool2d(2), [x])


def test_flatten():
    x = f64(randn(2, 3, 2, 2))
    np.testing.assert_array_equal(out_np(nn.Flatten(), x), x.numpy().reshape(2, 12))
    check_module_grads(nn.Flatten(), [x])


# -- Embedding --------------------------------------------------------------------------------
def test_embedding_forward_and_grads_with_repeated_indices():
    m = double(nn.Embedding(5, 3))
    idx = tp.asarray(np.array([[0, 4, 4], [1, 0, 4]]))
    np.testing.assert_array_equal(out_np(m, idx), m.weight.numpy()[idx.numpy()])
    check_module_grads(m, [idx])


def test_embedding_rejects_out_of_range_and_float_indices():
    m = nn.Embedding(5, 3)
    with pytest.raises(IndexError, match="index 5 is out of range for num_embeddings=5"):
        m(tp.asarray([1, 5]))
    with pytest.raises(TypeError, match="integers"):
        m(tp.asarray([1.0]))


# -- normalisation ----------------------------------------------------------------------------
def test_layer_norm_forward_and_grads():
    m = double(nn.LayerNorm(4))
    x = f64(randn(3, 2, 4))
    xn = x.numpy()
    ref = (xn - xn.mean(-1, keepdims=True)) / np.sqrt(xn.var(-1, keepdims=True) + 1e-5)
    ref = ref * m.weight.numpy() + m.bias.numpy()
    np.testing.assert_allclose(out_np(m, x), ref, rtol=1e-10)
    check_module_grads(m, [x])


def test_batch_norm1d_train_statistics_and_grads():
    m = double(nn.BatchNorm1d(3))
    x = f64(randn(6, 3))
    xn = x.numpy()
    ref = (xn - xn.mean(0)) / np.sqrt(xn.var(0) + 1e-5) * m.weight.numpy() + m.bias.numpy()
    np.testing.assert_allclose(out_np(m, x), ref, rtol=1e-10)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.1 * xn.mean(0), rtol=1e-12)
    np.testing.assert_allclose(m.running_var.numpy(), 0.9 + 0.1 * xn.var(0, ddof=1), rtol=1e-12)
    check_module_grads(m, [x])


def test_batch_norm2d_eval_uses_running_statistics():
    m = double(nn.BatchNorm2d(2))
    x = f64(randn(4, 2, 3, 3))
    xn = x.numpy()
    for _ in range(3):
        m(x)
    mean, var = xn.mean((0, 2, 3)), xn.var((0, 2, 3), ddof=1)
    expected_mean = mean * (1 - 0.9**3)
    expected_var = 0.9**3 + var * (1 - 0.9**3)
    np.testing.assert_allclose(m.running_mean.numpy(), expected_mean, rtol=1e-12)
    np.testing.assert_allclose(m.running_var.numpy(), expected_var, rtol=1e-12)
    m.eval()
    shape = (1, 2, 1, 1)
    ref = (xn - expected_mean.reshape(shape)) / np.sqrt(expected_var.reshape(shape) + 1e-5)
    ref = ref * m.weight.numpy().reshape(shape) + m.bias.numpy().reshape(shape)
    np.testing.assert_allclose(out_np(m, x), ref, rtol=1e-10)
    before = m.running_mean.numpy().copy()
    check_module_grads(m, [x])
    np.testing.assert_array_equal(m.running_mean.numpy(), before)  # eval leaves stats alone


def test_batch_norm2d_train_grads():
    check_module_grads(double(nn.BatchNorm2d(2)), [f64(randn(3, 2, 2, 2))])


# -- dropout and activations -------------------------------------------------------------------
def test_dropout_is_seeded_scaled_and_identity_in_eval():
    x = f64(np.ones((50, 40)))
    a, b = nn.Dropout(0.25, seed=3)(x), nn.Dropout(0.25, seed=3)(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert set(np.unique(a.numpy())) == {0.0, 1 / 0.75}
    assert abs((a.numpy() == 0).mean() - 0.25) < 0.03
    a.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), a.numpy())  # d/dx (x * mask) = mask
    d = nn.Dropout(0.25, seed=3).eval()
    assert d(x) is x


@pytest.mark.parametrize(
    ("module", "ref"),
    [
        (nn.ReLU(), lambda x: np.maximum(x, 0)),
        (nn.GELU(), lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))),
        (
            nn.GELU("tanh"),
            lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        ),
        (nn.Tanh(), np.tanh),
        (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
        (nn.Softmax(dim=-1), lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
        (nn.Identity(), lambda x: x),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else "",
)
def test_activation_forward_and_grads(module, ref):
    x = f64(randn(3, 4) + 0.05)  # away from relu's kink
    np.testing.assert_allclose(out_np(module, x), ref(x.numpy()), rtol=1e-10, atol=1e-12)
    check_module_grads(module, [x])


# -- attention ------------------------------------------------------------------------------------
def attention_ref(m: nn.MultiheadSelfAttention, x: np.ndarray) -> np.ndarray:
    def lin(layer, v):
        return v @ layer.weight.numpy().T + layer.bias.numpy()

    n, length, e = x.shape
    h, d = m.num_heads, e // m.num_heads

    def heads(v):
        return v.reshape(n, length, h, d).transpose(0, 2, 1, 3)

    q, k, v = heads(lin(m.q_proj, x)), heads(lin(m.k_proj, x)), heads(lin(m.v_proj, x))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    if m.causal:
        scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ v).transpose(0, 2, 1, 3).reshape(n, length, e)
    return lin(m.out_proj, out)


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_forward_and_grads(causal):
    m = double(nn.MultiheadSelfAttention(4, num_heads=2, causal=causal))
    x = f64(randn(2, 3, 4))
    np.testing.assert_allclose(out_np(m, x), attention_ref(m, x.numpy()), rtol=1e-10)
    check_module_grads(m, [x])


def test_causal_attention_ignores_the_future():
    m = double(nn.MultiheadSelfAttention(4, num_heads=2, causal=True))
    x = randn(1, 5, 4)
    changed = x.copy()
    changed[0, 3:] += 1.0
    a, b = out_np(m, f64(x)), out_np(m, f64(changed))
    np.testing.assert_allclose(a[0, :3], b[0, :3], rtol=1e-12)
    assert not np.allclose(a[0, 3:], b[0, 3:])


def test_transformer_block_grads():
    m = double(nn.TransformerBlock(4, 2, causal=True, mlp_ratio=2))
    check_module_grads(m, [f64(randn(1, 3, 4))], rtol=1e-5)


# -- the checker itself can fail -------------------------------------------------------------------
class _WrongSquare(tp.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x  # BUG (planted): should be 2 * x


class _Planted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return _WrongSquare.apply(self.fc(x))


def test_checker_catches_a_planted_wrong_backward():
    with pytest.raises(ModuleGradError, match="gradient of input 0 at"):
        check_module_grads(double(_Planted()), [f64(randn(2, 3))])
