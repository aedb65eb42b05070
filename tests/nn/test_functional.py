"""Losses and functional layers against NumPy references, finite differences and PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tpx as tp
import tpx.nn as nn
import tpx.nn.functional as F
from tests.helpers.nn_check import check_module_grads, f64

RNG = np.random.default_rng(0)


def log_softmax_ref(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def ce_ref(logits, target, weight=None, ignore_index=-100, smoothing=0.0, reduction="mean"):
    """PyTorch's definition, written out for (N, C) logits."""
    n, c = logits.shape
    logp = log_softmax_ref(logits)
    w = np.ones(c) if weight is None else weight
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    wi = w[safe] * valid
    nll = -logp[np.arange(n), safe] * wi
    smooth = -(logp * w).sum(-1) * valid
    loss = (1 - smoothing) * nll + smoothing / c * smooth
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / wi.sum()


# -- cross entropy and nll -------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    ("weighted", "ignore", "smoothing"),
    [(False, False, 0.0), (True, False, 0.0), (False, True, 0.1), (True, True, 0.2)],
)
def test_cross_entropy_matches_reference(reduction, weighted, ignore, smoothing):
    logits = RNG.standard_normal((6, 4)) * 3
    target = RNG.integers(0, 4, 6)
    if ignore:
        target[[1, 4]] = -1
    weight = RNG.uniform(0.5, 2.0, 4) if weighted else None
    got = F.cross_entropy(
        f64(logits),
        tp.asarray(target),
        weight=weight,
        ignore_index=-1,
        reduction=reduction,
        label_smoothing=smoothing,
    )
    ref = ce_ref(logits, target, weight, -1, smoothing, reduction)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = f64([[1e4, 0.0, -1e4], [0.0, 1e4, 1e4]])
    loss = F.cross_entropy(logits, tp.asarray([0, 1]))
    np.testing.assert_allclose(loss.item(), math.log(2) / 2, rtol=1e-12)
    loss.backward()
    assert np.isfinite(logits.grad.numpy()).all()


def test_cross_entropy_on_class_dim_1_of_sequences():
    logits = RNG.standard_normal((2, 5, 3))  # (N, C, L)
    target = RNG.integers(0, 5, (2, 3))
    got = F.cross_entropy(f64(logits), tp.asarray(target), reduction="none")
    flat = logits.transpose(0, 2, 1).reshape(-1, 5)
    np.testing.assert_allclose(
        got.numpy(), ce_ref(flat, target.ravel(), reduction="none").reshape(2, 3)
    )


def test_cross_entropy_errors_name_shapes_and_classes():
    with pytest.raises(ValueError, match=r"needs an integer target of shape \(4,\) or a float .*"
                       r"got \(3,\)"):  # fmt: skip
        F.cross_entropy(tp.zeros((4, 3)), tp.asarray([0, 1, 2]))
    with pytest.raises(IndexError, match="outside"):
        F.cross_entropy(tp.zeros((2, 3)), tp.asarray([0, 3]))
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(tp.zeros((2, 3)), tp.zeros(2))


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_grads(smoothing):
    target = tp.asarray(np.array([0, 2, -100, 1]))
    check_module_grads(
        lambda x: F.cross_entropy(x, target, label_smoothing=smoothing),
        [f64(RNG.standard_normal((4, 3)))],
        params=[],
    )


def test_nll_loss_matches_reference_and_module():
    logp = log_softmax_ref(RNG.standard_normal((5, 3)))
    target = np.array([0, 1, 2, 1, 0])
    expected = -logp[np.arange(5), target].mean()
    np.testing.assert_allclose(F.nll_loss(f64(logp), tp.asarray(target)).item(), expected)
    np.testing.assert_allclose(nn.NLLLoss()(f64(logp), tp.asarray(target)).item(), expected)
    np.testing.assert_allclose(
        nn.CrossEntropyLoss()(f64(RNG.standard_normal((2, 3))), tp.asarray([0, 1])).numpy().shape,
        (),
    )


# -- mse and bce ---------------------------------------------------------------------------------
def test_mse_loss():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    np.testing.assert_allclose(F.mse_loss(f64(a), f64(b)).item(), ((a - b) ** 2).mean())
    np.testing.assert_allclose(F.mse_loss(f64(a), f64(b), "sum").item(), ((a - b) ** 2).sum())
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(f64(a), f64(b), "avg")
    with pytest.raises(ValueError, match=r"\(3, 4\) and target \(4,\)"):
        F.mse_loss(f64(a), f64(b[0]))
    check_module_grads(lambda x: nn.MSELoss()(x, f64(b, False)), [f64(a)], params=[])


def test_bce_with_logits_matches_reference_and_is_stable():
    x = RNG.standard_normal(6) * 4
    y = RNG.uniform(0, 1, 6)
    pw = RNG.uniform(0.5, 3.0, 6)
    p = 1 / (1 + np.exp(-x))
    ref = -(pw * y * np.log(p) + (1 - y) * np.log(1 - p)).mean()
    got = F.binary_cross_entropy_with_logits(f64(x), f64(y), pos_weight=f64(pw, False))
    np.testing.assert_allclose(got.item(), ref, rtol=1e-12)
    big = F.binary_cross_entropy_with_logits(
        f64([800.0, -800.0]), f64([0.0, 1.0]), reduction="none"
    )
    np.testing.assert_allclose(big.numpy(), [800.0, 800.0])
    check_module_grads(
        lambda v: nn.BCEWithLogitsLoss(pos_weight=f64(pw, False))(v, f64(y, False)),
        [f64(x)],
        params=[],
    )


# -- functional layers ---------------------------------------------------------------------------
def test_one_hot_and_silu():
    assert F.one_hot(tp.asarray([2, 0]), 3).tolist() == [[0, 0, 1], [1, 0, 0]]
    x = RNG.standard_normal(5)
    np.testing.assert_allclose(F.silu(f64(x)).numpy(), x / (1 + np.exp(-x)))


def test_attention_bool_and_additive_masks_agree():
    q, k, v = (f64(RNG.standard_normal((2, 3, 4)), False) for _ in range(3))
    allowed = np.array([[True, False, True], [True, True, False], [False, True, True]])
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=tp.asarray(allowed))
    additive = np.where(allowed, 0.0, -np.inf)
    b = F.scaled_dot_product_attention(q, k, v, attn_mask=f64(additive, False))
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


# -- PyTorch, when installed ---------------------------------------------------------------------
def test_losses_match_torch():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    logits = RNG.standard_normal((7, 5))
    target = RNG.integers(0, 5, 7)
    target[2] = -100
    weight = RNG.uniform(0.5, 2.0, 5)
    for smoothing in (0.0, 0.25):
        ours = F.cross_entropy(
            f64(logits), tp.asarray(target), weight=weight, label_smoothing=smoothing
        )
        theirs = tF.cross_entropy(
            torch.tensor(logits),
            torch.tensor(target),
            weight=torch.tensor(weight),
            label_smoothing=smoothing,
        )
        np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-12)
    x, y = RNG.standard_normal(6), RNG.uniform(0, 1, 6)
    pw = RNG.uniform(0.5, 2, 6)
    ours = F.binary_cross_entropy_with_logits(f64(x), f64(y), pos_weight=f64(pw, False))
    theirs = tF.binary_cross_entropy_with_logits(
        torch.tensor(x), torch.tensor(y), pos_weight=torch.tensor(pw)
    )
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-12)


def test_attention_matches_torch():
    torch = pytest.importorskip("torch")
    q, k, v = (RNG.standard_normal((2, 2, 5, 4)) for _ in range(3))
    ours = F.scaled_dot_product_attention(f64(q), f64(k), f64(v), is_causal=True)
    theirs = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=True
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
