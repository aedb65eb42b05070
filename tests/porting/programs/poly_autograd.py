"""Fit sin(x) with a cubic, gradients by autograd, updates by hand (PyTorch's "Learning
PyTorch with Examples", tensors and autograd)."""

import math

import numpy as np
import torch


def main(tmpdir):
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(0)
    x = torch.linspace(-math.pi, math.pi, 200)
    y = torch.sin(x)
    a, b, c, d = (torch.tensor(rng.standard_normal(), requires_grad=True) for _ in range(4))
    learning_rate = 5e-6
    losses, log = [], []
    for t in range(30):
        y_pred = a + b * x + c * x**2 + d * x**3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        if t % 10 == 9:
            log.append(f"{t} {loss:.4f}")
        loss.backward()
        grads = [p.grad.clone() for p in (a, b, c, d)]
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return {
        "losses": losses,
        "grads": [g.numpy() for g in grads],
        "params": [p.item() for p in (a, b, c, d)],
        "log": log,
    }
