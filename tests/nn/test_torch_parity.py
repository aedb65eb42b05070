"""The same MLP, from the same initial weights on the same batches, in TPX and in PyTorch
(float64): 20 SGD steps and 20 Adam steps must give the same losses and weights."""

from __future__ import annotations

import numpy as np
import pytest

import p10
import tpx as tp
import tpx.nn as nn
import tpx.nn.functional as F
import tpx.optim as optim
from tpx.data import DataLoader, TensorDataset

torch = pytest.importorskip("torch")
torch.set_num_threads(1)  # 2-core CI machines: intra-op threads only add contention


def tpx_mlp() -> nn.Module:
    p10.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 4)).double()  # fmt: skip


def torch_copy(model: nn.Module):
    t = torch.nn.Sequential(
        torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.ReLU(),
        torch.nn.Linear(16, 4),
    ).double()  # fmt: skip
    t.load_state_dict({k: torch.tensor(v) for k, v in model.state_dict().items()})
    return t


def batches(steps: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 10))
    y = rng.integers(0, 4, 96)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, seed=0)
    out = []
    while len(out) < steps:
        out += [(bx.numpy(), by.numpy()) for bx, by in loader]
    return out[:steps]


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (
            lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
            lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
        ),
        (
            lambda ps: optim.Adam(ps, lr=0.01, weight_decay=1e-3),
            lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=1e-3),
        ),
        (
            lambda ps: optim.AdamW(ps, lr=0.01),
            lambda ps: torch.optim.AdamW(ps, lr=0.01),
        ),
        (
            lambda ps: optim.Adadelta(ps, lr=1.0, rho=0.8, weight_decay=1e-3),
            lambda ps: torch.optim.Adadelta(ps, lr=1.0, rho=0.8, weight_decay=1e-3),
        ),
        (
            lambda ps: optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True, weight_decay=1e-3),
            lambda ps: torch.optim.RMSprop(
                ps, lr=0.01, momentum=0.5, centered=True, weight_decay=1e-3
            ),
        ),
        (
            lambda ps: optim.RMSprop(ps, lr=0.01),
            lambda ps: torch.optim.RMSprop(ps, lr=0.01),
        ),
        (
            lambda ps: optim.Adagrad(
                ps, lr=0.1, lr_decay=0.01, weight_decay=1e-3, initial_accumulator_value=0.1
            ),
            lambda ps: torch.optim.Adagrad(
                ps, lr=0.1, lr_decay=0.01, weight_decay=1e-3, initial_accumulator_value=0.1
            ),
        ),
    ],
    ids=["sgd", "adam", "adamw", "adadelta", "rmsprop-centered-momentum", "rmsprop", "adagrad"],
)
def test_training_matches_pytorch(ours, theirs):
    model = tpx_mlp()
    ref = torch_copy(model)
    opt, ref_opt = ours(model.parameters()), theirs(ref.parameters())
    for x, y in batches(20):
        opt.zero_grad()
        loss = F.cross_entropy(model(tp.asarray(x)), tp.asarray(y))
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = torch.nn.functional.cross_entropy(ref(torch.tensor(x)), torch.tensor(y))
        ref_loss.backward()
        ref_opt.step()
        np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-12)
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(
            value, ref.state_dict()[name].numpy(), rtol=1e-10, atol=1e-12, err_msg=name
        )


def test_cnn_and_batchnorm_forward_backward_match_pytorch():
    p10.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16, 3),
    ).double()  # fmt: skip
    ref = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(16, 3),
    ).double()  # fmt: skip
    sd = {k: torch.tensor(v) for k, v in model.state_dict().items()}
    ref.load_state_dict(sd)
    x = np.random.default_rng(1).standard_normal((3, 2, 4, 4))
    out = model(tp.asarray(x))
    ref_out = ref(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    ref_out.sum().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)  # fmt: skip
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(model[1], name).numpy(),
                                   getattr(ref[1], name).numpy(), rtol=1e-12)  # fmt: skip
