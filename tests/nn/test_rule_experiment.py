"""examples/rule_experiment.py: its GELU rule is the tanh approximation's derivative, and its
memory experiment shows the peak of saved memory that a rule's saves cost."""

from __future__ import annotations

import numpy as np

import tpx as tp
from p10 import Op
from tests.helpers.load import load_example


def _load():
    return load_example("rule_experiment")


def _grad(x0, approximate):
    x = tp.asarray(x0, requires_grad=True)
    tp.gelu(x, approximate=approximate).sum().backward()
    return x.grad.numpy()


def test_gelu_tanh_vjp_is_the_tanh_approximations_rule():
    ex = _load()
    x0 = np.linspace(-4, 4, 41).astype(np.float64)
    with tp.override_rule(Op.GELU, ex.gelu_tanh_vjp):
        swapped = _grad(x0, "none")  # exact forward, the approximation's rule
    np.testing.assert_allclose(swapped, _grad(x0, "tanh"), rtol=1e-12, atol=1e-12)
    gap = np.abs(swapped - _grad(x0, "none")).max()
    assert 1e-5 < gap < 1e-2  # close to the exact rule, but not the same


def test_memory_experiment_saving_the_input_costs_peak_memory_not_gradients():
    report = _load().memory_experiment()
    assert report.exit_code == 0 and report.losses_a == report.losses_b
    step = report.steps[0]
    # two tanh layers of (128, 64) float32: the inputs kept on top of the shared outputs
    assert step.peak_saved_bytes_a - step.peak_saved_bytes_b == 2 * 128 * 64 * 4
    assert all(n.saved_bytes_a == n.saved_bytes_b for n in step.nodes)
