"""Rule experiments: swap one gradient rule and see what it changes (see docs/rule-experiments.md).

    python examples/rule_experiment.py            # both experiments
    python examples/rule_experiment.py --quick    # shorter runs (CI)
    python examples/rule_experiment.py mlp        # the small tanh MLP of the memory experiment

1. GELU: the tiny transformer with the exact (erf) GELU in its forward, trained 50 steps twice
   with the same seed: A with the exact rule, B with the rule of the tanh approximation
   (:func:`gelu_tanh_vjp`). The report shows how far B's gradients are from A's at each node and
   the loss of both runs after 50 steps.
2. Memory: tanh's built-in rule saves its output; :data:`tanh_saves_input` saves its input and
   recomputes tanh in the backward. In an MLP the tanh output is also the next matmul's saved
   input (one buffer, counted once), while the input is kept only for this rule: the peak of
   saved memory grows by one activation per layer, with identical gradients.

The same experiments from the command line (exit 0: B matches A, 1: it diverges)::

    tpx-inspect ab examples/tiny_transformer.py \\
        --rule gelu=examples/rule_experiment.py:gelu_tanh_vjp --steps first:1 \\
        -- --steps 50 --gelu none
    tpx-inspect ab examples/rule_experiment.py mlp \\
        --rule tanh=examples/rule_experiment.py:tanh_saves_input --steps first:1
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import p10
import tpx as tp
import tpx.nn as nn
import tpx.optim as optim
from p10 import Op
from tpx.rules import RULES

HERE = Path(__file__).resolve().parent
_K = math.sqrt(2.0 / math.pi)


def gelu_tanh_vjp(ctx: tp.RuleContext, g: Any) -> tuple[Any]:
    """The derivative of GELU's tanh approximation, ``0.5 x (1 + tanh(k (x + 0.044715 x^3)))``,
    used as the rule of the exact GELU (it reads the input, as the exact rule does)."""
    x = ctx.inputs[0]
    t = p10.tanh((x + x * x * x * 0.044715) * _K)
    dinner = (x * x * (3 * 0.044715) + 1) * _K
    return (g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner),)


def _tanh_from_input(ctx: tp.RuleContext, g: Any) -> tuple[Any]:
    t = p10.tanh(ctx.inputs[0])
    return (g - g * t * t,)


tanh_saves_input = tp.Rule(_tanh_from_input, save=(0,), save_output=False)
"""tanh's gradient from its saved input (tanh recomputed in the backward)."""

tanh_saves_output = RULES[Op.TANH]
"""The built-in rule: ``g * (1 - out^2)`` from the saved output."""


def mlp_main(steps: int = 5) -> list[float]:
    """Train a 3-layer tanh MLP on random data for ``steps`` steps; the losses."""
    p10.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)
    )
    opt = optim.SGD(model.parameters(), lr=0.05)
    x, y = tp.randn((128, 32)), tp.randn((128, 1))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def gelu_experiment(steps: int) -> Any:
    """A: exact GELU with its exact rule; B: the same forward, the tanh approximation's rule."""
    from tpx_inspect.ab import parse_override, run_ab

    rule = parse_override("rule", f"gelu={__file__}:gelu_tanh_vjp")
    args = ["--steps", str(steps), "--gelu", "none"]
    # NOTE: every value of step 0 kept (the largest is 32 x 32 x 256): exact differences
    return run_ab(str(HERE / "tiny_transformer.py"), args, [rule], steps="first:1", values="all")


def memory_experiment() -> Any:
    """A: tanh saving its input; B: the built-in tanh rule, saving its output."""
    from tpx_inspect.ab import parse_override, run_ab

    a = parse_override("rule", f"tanh={__file__}:tanh_saves_input")
    b = parse_override("rule", f"tanh={__file__}:tanh_saves_output")
    return run_ab(__file__, ["mlp"], [b], overrides_a=[a], steps="first:1")


def _summary(name: str, report: Any) -> None:
    step = report.steps[0]
    print(
        f"{name}: {'diverges' if report.diverged else 'matches'}; peak saved bytes "
        f"A {step.peak_saved_bytes_a} B {step.peak_saved_bytes_b}; final loss "
        f"A {report.losses_a[-1]:.6f} B {report.losses_b[-1]:.6f}"
    )
    if report.first is not None:
        print(f"  first divergence: {report.first.describe()}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run both experiments, print their reports; returns them by name."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", choices=("experiments", "mlp"), default="experiments")
    parser.add_argument("--quick", action="store_true", help="10 transformer steps, not 50")
    args = parser.parse_args(argv)
    if args.mode == "mlp":
        print("losses", mlp_main())
        return {}
    reports = {"gelu": gelu_experiment(10 if args.quick else 50), "memory": memory_experiment()}
    for name, report in reports.items():
        report.render(limit=12)
        _summary(name, report)
    return reports


if __name__ == "__main__":
    main(sys.argv[1:])
