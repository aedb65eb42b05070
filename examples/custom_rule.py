"""A user-defined differentiable op (``tp.Function``), with a correct backward and, behind
``--wrong``, a deliberately wrong one, so that gradient checks have something to catch.

    python examples/custom_rule.py            # the correct SiLU backward
    python examples/custom_rule.py --wrong    # a backward that forgets a term

The op is SiLU, ``x * sigmoid(x)``, whose derivative is ``s + x s (1 - s)`` with
``s = sigmoid(x)``. The wrong backward returns only ``s``, a classic slip. The script trains a
tiny MLP that uses the op and compares its analytic gradient with central finite
differences along a random direction (float64). The inspect layer imports ``silu_function``,
``make_problem`` and ``main`` from here; ``loss`` / ``wrong_loss`` with ``loss_inputs`` are
targets for ``tpx-inspect gradcheck examples/custom_rule.py::wrong_loss``.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

import numpy as np

import p10
import tpx as tp
import tpx.nn as nn
import tpx.nn.functional as F


class SiLU(tp.Function):
    """``x * sigmoid(x)`` with a hand-written backward."""

    @staticmethod
    def forward(ctx: tp.FunctionCtx, x: tp.Tensor) -> tp.Tensor:
        ctx.save_for_backward(x)
        return x * tp.sigmoid(x)

    @staticmethod
    def backward(ctx: tp.FunctionCtx, grad_output: tp.Tensor) -> tp.Tensor:
        (x,) = ctx.saved_tensors
        s = tp.sigmoid(x)
        return grad_output * (s + x * s * (1.0 - s))


class WrongSiLU(tp.Function):
    """The same forward; the backward drops the ``x s (1 - s)`` term (deliberately wrong)."""

    @staticmethod
    def forward(ctx: tp.FunctionCtx, x: tp.Tensor) -> tp.Tensor:
        ctx.save_for_backward(x)
        return x * tp.sigmoid(x)

    @staticmethod
    def backward(ctx: tp.FunctionCtx, grad_output: tp.Tensor) -> tp.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * tp.sigmoid(x)  # BUG (on purpose): d/dx x*s(x) is not s(x)


def silu_function(wrong: bool = False) -> type[tp.Function]:
    """The correct :class:`SiLU`, or :class:`WrongSiLU` when ``wrong``."""
    return WrongSiLU if wrong else SiLU


class CustomMLP(nn.Module):
    """Linear -> custom SiLU -> Linear."""

    def __init__(self, fn: type[tp.Function], d_in: int = 4, hidden: int = 8, d_out: int = 3):
        super().__init__()
        self.fn = fn
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, d_out)

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return self.fc2(self.fn.apply(self.fc1(x)))


def make_problem(wrong: bool = False, seed: int = 0) -> tuple[CustomMLP, tp.Tensor, tp.Tensor]:
    """A float64 model using the op, an input batch that requires grad, and class targets."""
    p10.manual_seed(seed)
    model = CustomMLP(silu_function(wrong)).double()
    gen = p10.random.Generator(seed)
    x = tp.asarray(gen.randn((5, 4), dtype="float64") * 2.0, requires_grad=True)
    y = tp.asarray(gen.randint(0, 3, (5,)))
    return model, x, y


@functools.cache
def _problem(wrong: bool) -> tuple[CustomMLP, tp.Tensor, tp.Tensor]:
    return make_problem(wrong)


def loss(x: tp.Tensor) -> tp.Tensor:
    """Cross entropy of the model with the correct SiLU at input ``x`` (shape (5, 4)): a
    target for ``tpx-inspect gradcheck examples/custom_rule.py::loss``."""
    model, _, y = _problem(False)
    return F.cross_entropy(model(x), y)


def wrong_loss(x: tp.Tensor) -> tp.Tensor:
    """The same with the deliberately wrong SiLU backward (``::wrong_loss``)."""
    model, _, y = _problem(True)
    return F.cross_entropy(model(x), y)


def loss_inputs(generator: p10.random.Generator) -> tuple[tp.Tensor]:
    """A float64 input of shape (5, 4) drawn from ``generator``, requiring grad."""
    return (tp.asarray(generator.randn((5, 4), dtype="float64"), requires_grad=True),)


wrong_loss_inputs = loss_inputs


def directional_check(model: CustomMLP, x: tp.Tensor, y: tp.Tensor, eps: float = 1e-6) -> float:
    """Relative error between the analytic and the finite-difference derivative of the loss
    along a random direction in (x, parameters) space."""
    leaves = [x, *model.parameters()]
    for t in leaves:
        t.grad = None
    F.cross_entropy(model(x), y).backward()
    rng = np.random.default_rng(1)
    directions = [rng.standard_normal(t.shape) for t in leaves]
    analytic = sum(
        float((np.asarray(t.grad.numpy()) * d).sum()) for t, d in zip(leaves, directions)
    )
    originals = [np.array(t.numpy(), copy=True) for t in leaves]

    def loss_at(step: float) -> float:
        with tp.no_grad():
            for t, o, d in zip(leaves, originals, directions):
                t.copy_(p10.asarray(o + step * d))
            return F.cross_entropy(model(x), y).item()

    numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
    loss_at(0.0)
    return abs(analytic - numeric) / max(abs(numeric), 1e-12)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Build the problem with the chosen backward, check it, print and return the error."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wrong", action="store_true", help="use the deliberately wrong backward")
    parser.add_argument("--quick", action="store_true", help="accepted for CI (already quick)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    model, x, y = make_problem(args.wrong, args.seed)
    error = directional_check(model, x, y)
    name = silu_function(args.wrong).__name__
    verdict = "agrees with" if error < 1e-6 else "DISAGREES with"
    print(f"{name}: analytic gradient {verdict} finite differences (relative error {error:.2e})")
    return {"function": name, "relative_error": error, "model": model, "x": x, "y": y}


if __name__ == "__main__":
    main()
