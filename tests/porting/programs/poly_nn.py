"""Fit sin(x) with a cubic written as nn.Linear on the powers of x, then again with an
optimizer (PyTorch's "Learning PyTorch with Examples", nn and optim)."""

import math

import numpy as np
import torch


def init(model, rng):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.1))


def main(tmpdir):
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(1)
    x = torch.linspace(-math.pi, math.pi, 200)
    y = torch.sin(x)
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
    init(model, rng)
    loss_fn = torch.nn.MSELoss(reduction="sum")
    learning_rate = 1e-6
    losses = []
    for _ in range(20):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    grads = [param.grad.numpy().copy() for param in model.parameters()]
    linear_layer = model[0]
    first = [linear_layer.bias.item()] + linear_layer.weight[:, 0].tolist()

    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
    init(model, rng)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    for _ in range(20):
        loss = loss_fn(model(xx), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    grads += [param.grad.numpy().copy() for param in model.parameters()]
    return {"losses": losses, "grads": grads, "first": first}
