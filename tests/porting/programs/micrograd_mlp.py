"""A scalar-valued MLP built from 0-d tensors, as micrograd's demo: neurons hold lists of
scalars, the loss is a Python sum, updates go through .data."""

import numpy as np
import torch


class Neuron:
    def __init__(self, nin, rng):
        self.w = [torch.tensor(rng.uniform(-1, 1), requires_grad=True) for _ in range(nin)]
        self.b = torch.tensor(rng.uniform(-1, 1), requires_grad=True)

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.tanh()

    def parameters(self):
        return self.w + [self.b]


class Layer:
    def __init__(self, nin, nout, rng):
        self.neurons = [Neuron(nin, rng) for _ in range(nout)]

    def __call__(self, x):
        outs = [n(x) for n in self.neurons]
        return outs[0] if len(outs) == 1 else outs

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP:
    def __init__(self, nin, nouts, rng):
        sz = [nin] + nouts
        self.layers = [Layer(sz[i], sz[i + 1], rng) for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def main(tmpdir):
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(2)
    n = MLP(3, [4, 4, 1], rng)
    xs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
    ys = [1.0, -1.0, -1.0, 1.0]
    losses = []
    for _ in range(15):
        ypred = [n(x) for x in xs]
        loss = sum((yout - ygt) ** 2 for ygt, yout in zip(ys, ypred))
        losses.append(loss.item())
        for p in n.parameters():
            p.grad = None
        loss.backward()
        grads = [p.grad.item() for p in n.parameters()]
        for p in n.parameters():
            p.data += -0.05 * p.grad
    preds = [n(x).item() for x in xs]
    return {"losses": losses, "grads": grads, "preds": preds}
