"""Which rule function a node runs: the complex convention's wrapper only where a value is
complex (``Rule.real_vjp`` for the rest, chosen when the node is recorded), with the gradients
of mixed real/complex graphs unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import p10
import tpx as tp
from p10 import Op
from tpx.rules import RULES


def test_real_nodes_run_the_bare_rule_and_complex_nodes_the_wrapper() -> None:
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    z = tp.asarray([1 + 2j, 3 - 1j], requires_grad=True)
    rule = RULES[Op.MUL]
    assert rule.real_vjp is not rule.vjp  # mul is wrapped for complex values
    assert (x * x).grad_fn.vjp is rule.real_vjp  # the shortcut recorder
    assert p10.multiply(x, x).grad_fn.vjp is rule.real_vjp  # the general recorder
    assert (z * z).grad_fn.vjp is rule.vjp
    assert (x * z).grad_fn.vjp is rule.vjp  # a real input next to a complex one
    assert tp.abs(z).grad_fn.vjp is RULES[Op.ABS].vjp  # complex input, real output
    assert tp.abs(x).grad_fn.vjp is RULES[Op.ABS].real_vjp


def test_mixed_graph_gradients_are_those_of_the_complex_convention() -> None:
    xa = np.array([0.5, -1.5, 2.0])
    za = np.array([1 + 2j, -0.5 + 1j, 2 - 3j])
    x = tp.asarray(xa, requires_grad=True)
    z = tp.asarray(za, requires_grad=True)
    loss = tp.abs(tp.tanh(x) * z * z).sum() + (x * x).sum()
    loss.backward()
    # |tanh(x) z^2| = |tanh(x)| |z|^2: d/dx = sign(tanh x) (1 - tanh^2 x) |z|^2 + 2x,
    # and the conjugate-Wirtinger gradient of |t| |z|^2 in z is 2 |t| z
    t = np.tanh(xa)
    np.testing.assert_allclose(
        x.grad.numpy(), np.sign(t) * (1 - t**2) * np.abs(za) ** 2 + 2 * xa, rtol=1e-10
    )
    np.testing.assert_allclose(z.grad.numpy(), 2 * np.abs(t) * za, rtol=1e-10)
    assert x.grad.dtype == tp.float64 and z.grad.dtype == tp.complex128


def test_a_replaced_rule_function_reaches_real_nodes() -> None:
    # a planted bug made with dataclasses.replace must not keep the old real_vjp
    rule = RULES[Op.MUL]

    def doubled(ctx, g):
        return tuple(None if gi is None else gi * 2.0 for gi in rule.vjp(ctx, g))

    planted = dataclasses.replace(rule, vjp=doubled)
    assert planted.real_vjp is doubled
    assert planted == dataclasses.replace(rule, vjp=doubled)  # real_vjp is not compared
    with tp.override_rule(Op.MUL, planted):
        x = tp.asarray([3.0], requires_grad=True)
        (x * 2.0).sum().backward()
    assert x.grad.tolist() == [4.0]


def test_backward_refuses_a_gradient_of_the_other_kind() -> None:
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    with pytest.raises(tp.BackwardError, match=r"complex(64|128) .* float32"):
        (x * 2).backward(tp.asarray([1j, 1j]))
    z = tp.asarray([1j, 2j], requires_grad=True)
    with pytest.raises(tp.BackwardError, match="dtype complex"):
        (z * 2).backward(tp.asarray([1.0, 1.0]))
