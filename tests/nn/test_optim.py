"""Optimizer steps against updates computed by hand in NumPy; schedules; clipping; state."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tpx as tp
import tpx.optim as optim

RNG = np.random.default_rng(0)
GRADS = [RNG.standard_normal((2, 3)) for _ in range(4)]
START = RNG.standard_normal((2, 3))


def run(opt_factory, steps: int = 4) -> np.ndarray:
    """Apply ``steps`` updates with the fixed gradients ``GRADS``; return the weights."""
    w = tp.asarray(START.copy(), requires_grad=True)
    opt = opt_factory([w])
    for g in GRADS[:steps]:
        opt.zero_grad()
        w.grad = tp.asarray(g)
        opt.step()
    return w.numpy()


def sgd_ref(lr, momentum=0.0, dampening=0.0, wd=0.0, nesterov=False) -> np.ndarray:
    w, buf = START.copy(), None
    for g in GRADS:
        g = g + wd * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
    return w


def adam_ref(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, decoupled=False, amsgrad=False):
    w, m, v, vmax = START.copy(), 0.0, 0.0, 0.0
    for t, g in enumerate(GRADS, start=1):
        if decoupled:
            w = w * (1 - lr * wd)
        else:
            g = g + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vhat = (vmax if amsgrad else v) / (1 - b2**t)
        w = w - lr * (m / (1 - b1**t)) / (np.sqrt(vhat) + eps)
    return w


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": 0.1},
        {"lr": 0.1, "momentum": 0.9},
        {"lr": 0.1, "momentum": 0.9, "dampening": 0.5},
        {"lr": 0.05, "momentum": 0.8, "nesterov": True},
        {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
    ],
)
def test_sgd_matches_hand_computed_updates(kwargs):
    got = run(lambda ps: optim.SGD(ps, **kwargs))
    ref_kwargs = {k: v for k, v in kwargs.items() if k != "weight_decay"}
    ref = sgd_ref(wd=kwargs.get("weight_decay", 0.0), **ref_kwargs)
    np.testing.assert_allclose(got, ref, rtol=1e-13)


@pytest.mark.parametrize(
    ("cls", "kwargs", "ref_kwargs"),
    [
        (optim.Adam, {"lr": 0.01}, {}),
        (
            optim.Adam,
            {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6},
            {"b1": 0.8, "b2": 0.99, "eps": 1e-6},
        ),
        (optim.Adam, {"lr": 0.01, "weight_decay": 0.1}, {"wd": 0.1}),
        (optim.Adam, {"lr": 0.01, "amsgrad": True}, {"amsgrad": True}),
        (optim.AdamW, {"lr": 0.01}, {"wd": 0.01, "decoupled": True}),
        (optim.AdamW, {"lr": 0.01, "weight_decay": 0.3}, {"wd": 0.3, "decoupled": True}),
    ],
)
def test_adam_family_matches_hand_computed_updates(cls, kwargs, ref_kwargs):
    got = run(lambda ps: cls(ps, **kwargs))
    np.testing.assert_allclose(got, adam_ref(kwargs["lr"], **ref_kwargs), rtol=1e-12)


def test_updates_keep_parameter_identity_dtype_and_record_nothing():
    w = tp.ones(3, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    raw = w.p10
    opt.step()
    assert w.p10 is raw and w.dtype == np.float32 and w.is_leaf and w.version == 1
    assert opt.state[0]["exp_avg"].grad_fn is None


def test_parameters_without_grad_are_skipped_and_groups_have_own_lr():
    a, b = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    opt = optim.SGD([{"params": [a], "lr": 1.0}, {"params": [b]}], lr=0.1)
    a.grad = tp.ones(2)
    opt.step()
    assert a.tolist() == [0.0, 0.0] and b.tolist() == [1.0, 1.0]
    b.grad = tp.ones(2)
    opt.step()
    np.testing.assert_allclose(b.numpy(), [0.9, 0.9], rtol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="leaf tensors that require grad"):
        optim.SGD([tp.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="nesterov"):
        optim.SGD([tp.ones(1, requires_grad=True)], lr=0.1, nesterov=True)
    w = tp.ones(1, requires_grad=True)
    with pytest.raises(ValueError, match="two groups"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)


def test_zero_grad_to_none_or_zeros():
    w = tp.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    w.grad = tp.ones(2)
    opt.zero_grad(set_to_none=False)
    assert w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


@pytest.mark.parametrize(
    "factory",
    [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.AdamW(ps, lr=0.01)],
    ids=["sgd", "adamw"],
)
def test_state_dict_resumes_exactly(factory):
    full = run(factory, steps=4)
    w = tp.asarray(START.copy(), requires_grad=True)
    opt = factory([w])
    for g in GRADS[:2]:
        w.grad = tp.asarray(g)
        opt.step()
    saved = opt.state_dict()
    assert all(
        isinstance(v, (np.ndarray, int)) for s in saved["state"].values() for v in s.values()
    )
    w2 = tp.asarray(w.numpy().copy(), requires_grad=True)
    opt2 = factory([w2])
    opt2.load_state_dict(saved)
    for g in GRADS[2:4]:
        w2.grad = tp.asarray(g)
        opt2.step()
    np.testing.assert_allclose(w2.numpy(), full, rtol=1e-13)


def test_load_state_dict_checks_group_sizes():
    opt = optim.SGD([tp.ones(1, requires_grad=True)], lr=0.1)
    other = optim.SGD([tp.ones(1, requires_grad=True), tp.ones(1, requires_grad=True)], lr=0.1)
    with pytest.raises(RuntimeError, match=r"hold \[2\] parameters, this optimizer \[1\]"):
        opt.load_state_dict(other.state_dict())


# -- schedules ------------------------------------------------------------------------------------
def test_step_lr_and_cosine_values():
    opt = optim.SGD([tp.ones(1, requires_grad=True)], lr=0.5)
    step = optim.StepLR(opt, step_size=3, gamma=0.1)
    lrs = []
    for _ in range(7):
        lrs.append(opt.param_groups[0]["lr"])
        step.step()
    np.testing.assert_allclose(lrs, [0.5] * 3 + [0.05] * 3 + [0.005])
    opt = optim.SGD([tp.ones(1, requires_grad=True)], lr=1.0)
    cos = optim.CosineAnnealingLR(opt, T_max=4, eta_min=0.1)
    lrs = []
    for _ in range(5):
        lrs.append(cos.get_last_lr()[0])
        cos.step()
    ref = [0.1 + 0.9 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)]
    np.testing.assert_allclose(lrs, ref, rtol=1e-12)
    state = cos.state_dict()
    assert state["last_epoch"] == 5 and "optimizer" not in state


# -- clipping -------------------------------------------------------------------------------------
def test_clip_grad_norm_scales_jointly_and_returns_the_norm():
    a, b = tp.zeros(2, requires_grad=True), tp.zeros(1, requires_grad=True)
    a.grad, b.grad = tp.asarray([3.0, 0.0]), tp.asarray([4.0])
    assert optim.clip_grad_norm_([a, b], 10.0) == pytest.approx(5.0)
    assert a.grad.tolist() == [3.0, 0.0]  # under the limit: untouched
    assert optim.clip_grad_norm_([a, b], 1.0) == pytest.approx(5.0)
    np.testing.assert_allclose([*a.grad.tolist(), *b.grad.tolist()], [0.6, 0.0, 0.8], rtol=1e-5)
    a.grad = tp.asarray([1.0, -7.0])
    assert optim.clip_grad_norm_(a, 1.0, norm_type=math.inf) == pytest.approx(7.0)
    a.grad = tp.asarray([math.nan, 1.0])
    with pytest.raises(RuntimeError, match="nan"):
        optim.clip_grad_norm_(a, 1.0, error_if_nonfinite=True)
