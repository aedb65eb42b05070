"""Fit sin(x) with a + b * P3(c + d x), P3 a custom autograd.Function (PyTorch's "Defining
new autograd functions")."""

import math

import numpy as np
import torch


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


def main(tmpdir):
    torch.set_default_dtype(torch.float64)
    x = torch.linspace(-math.pi, math.pi, 200)
    y = torch.sin(x)
    a = torch.full((), 0.0, requires_grad=True)
    b = torch.full((), -1.0, requires_grad=True)
    c = torch.full((), 0.0, requires_grad=True)
    d = torch.full((), 0.3, requires_grad=True)
    learning_rate = 5e-6
    losses = []
    for _ in range(30):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        grads = [p.grad.numpy().copy() for p in (a, b, c, d)]
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= learning_rate * p.grad
                p.grad = None
    (g,) = torch.autograd.grad(LegendrePolynomial3.apply(d * x).sum(), d)
    return {"losses": losses, "grads": grads, "grad_fn": [g.item()], "check": [float(np.pi)]}
