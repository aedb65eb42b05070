"""A/B rule and kernel experiments: run a script as it is (A) and with one or more rules or
kernels overridden (B), under capture with the same seed, and compare the two runs.

The report gives, per kept step and node, the forward-value and gradient differences, the
saved bytes and backward time of A and B, the peak saved memory, the loss of every step, and
the first node where B leaves A beyond a tolerance. ``tpx-inspect ab`` prints it.

>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "step.py").write_text(
...     "import tpx as tp\\n"
...     "x = tp.asarray([0.5, -1.0], requires_grad=True)\\n"
...     "(x.tanh() * 3).sum().backward()\\n")
>>> _ = (d / "rules.py").write_text("def double(ctx, g):\\n    return (g * 2,)\\n")
>>> o = parse_override("rule", f"tanh={d / 'rules.py'}:double")
>>> r = run_ab(str(d / "step.py"), [], [o])
>>> r.exit_code, r.first.op, r.first.phase
(1, 'tanh', 'backward')
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
import os
import random
import sys
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import p10
import tpx
from tpx_inspect._ab_compare import (
    Divergence,
    NodeAB,
    StepAB,
    Tolerance,
    compare_graphs,
    first_divergence,
)
from tpx_inspect.capture import Capture, Policy
from tpx_inspect.errors import InspectError
from tpx_inspect.records import Trace
from tpx_inspect.script import ScriptResult, run_captured

__all__ = [
    "ABError", "ABReport", "Divergence", "NodeAB", "Override", "StepAB", "Tolerance",
    "apply_overrides", "parse_override", "run_ab",
]  # fmt: skip


class ABError(InspectError, ValueError):
    """Bad input to an A/B experiment: an unknown op, a function that cannot be imported or has
    the wrong signature, a malformed ``op=module:function`` spec.

    >>> parse_override("rule", "tanh")
    Traceback (most recent call last):
    ...
    tpx_inspect.ab.ABError: --rule 'tanh': expected OP=MODULE:FUNCTION, e.g. tanh=mymodule:tanh_vjp
    """


@dataclass(frozen=True)
class Override:
    """One override of run B: a ``rule`` or a ``kernel`` of ``op``, the function (or
    :class:`tpx.Rule`) that replaces it, named ``target`` (``module:function``).

    >>> parse_override("rule", "tanh=tpx.rules:_tanh").to_json()
    {'kind': 'rule', 'op': 'tanh', 'target': 'tpx.rules:_tanh'}
    """

    kind: str
    op: Any
    target: str
    fn: Any = field(repr=False, compare=False)
    backend: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The override as a JSON object."""
        return {"kind": self.kind, "op": self.op.value, "target": self.target}


def parse_override(kind: str, spec: str, backend: str | None = None) -> Override:
    """``OP=MODULE:FUNCTION`` (MODULE a dotted module name or a ``.py`` path) as an
    :class:`Override`, checked as ``tp.override_rule`` / ``p10.override_kernel`` check it."""
    op_name, eq, target = spec.partition("=")
    module, colon, name = target.rpartition(":")
    if not eq or not colon or not module or not name:
        raise ABError(
            f"--{kind} {spec!r}: expected OP=MODULE:FUNCTION, e.g. tanh=mymodule:tanh_{_eg(kind)}"
        )
    try:
        op = p10.op_from_name(op_name.strip())
    except p10.P10Error:
        raise ABError(f"--{kind} {spec!r}: unknown op {op_name.strip()!r}") from None
    fn = _import(kind, spec, module, name)
    o = Override(kind, op, target, fn, backend)
    try:
        with apply_overrides([o]):
            pass
    except (tpx.RuleOverrideError, p10.KernelOverrideError) as e:
        raise ABError(f"--{kind} {spec!r}: {str(e).splitlines()[0]}") from None
    return o


def _eg(kind: str) -> str:
    return "vjp" if kind == "rule" else "fast"


def _import(kind: str, spec: str, module: str, name: str) -> Any:
    try:
        if module.endswith(".py") or os.sep in module:
            mod = _import_file(Path(module))
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            mod = importlib.import_module(module)
    except Exception as e:  # the user's module failed to import: a one-line reason
        raise ABError(
            f"--{kind} {spec!r}: cannot import {module}: {type(e).__name__}: {e}"
        ) from None
    try:
        return getattr(mod, name)
    except AttributeError:
        raise ABError(f"--{kind} {spec!r}: {module} has no attribute {name!r}") from None


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"no such file {path}")
    resolved = str(path.resolve())
    mod = _file_modules.get(resolved)
    if mod is not None:
        return mod
    # NOTE: named after the file (what traces show as "rules:tanh_vjp"), registered in
    # sys.modules only when no other module has that name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _file_modules[resolved] = mod
    sys.modules.setdefault(path.stem, mod)
    return mod


_file_modules: dict[str, Any] = {}


@contextlib.contextmanager
def apply_overrides(overrides: Sequence[Override]) -> Iterator[None]:
    """Enter every override (rules with ``tp.override_rule``, kernels with
    ``p10.override_kernel``) for the block.

    >>> import tpx as tp
    >>> with apply_overrides([parse_override("rule", "tanh=tpx.rules:_sigmoid")]):
    ...     tp.ones(1, requires_grad=True).tanh().grad_fn.overrides
    {'rule': 'tpx.rules:_sigmoid'}
    """
    with contextlib.ExitStack() as stack:
        for o in overrides:
            if o.kind == "rule":
                stack.enter_context(tpx.override_rule(o.op, o.fn))
            else:
                stack.enter_context(p10.override_kernel(o.op, o.fn, backend=o.backend))
        yield


DEFAULT_TOLERANCE = Tolerance()


class LossRecorder:
    """An observer that keeps the loss (the root's value, when it is a scalar) of every
    backward, kept by the capture policy or not.

    >>> import tpx as tp
    >>> rec = LossRecorder()
    >>> with tp.add_observer(rec):
    ...     (tp.ones(2, requires_grad=True) * 3).sum().backward()
    >>> rec.losses
    [6.0]
    """

    def __init__(self) -> None:
        self.losses: list[float] = []
        self._scalars: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def on_node_forward(self, node: Any, inputs: tuple, output: Any, seconds: float) -> None:
        raw = output.p10
        if raw.ndim == 0 or math.prod(raw.shape) == 1:
            self._scalars[node] = float(np.asarray(raw.numpy()).reshape(-1)[0])

    def on_backward_start(self, roots: Any, grads: dict, order: list) -> None:
        value = self._scalars.get(roots[0]) if roots else None
        self.losses.append(math.nan if value is None else value)


@dataclass(frozen=True)
class ABReport:
    """A and B compared: per-step node comparisons, losses, the first divergence, errors.

    >>> r = ABReport((), (), (1.0,), (1.0,), None, Tolerance())
    >>> r.exit_code, r.to_json()["verdict"]
    (0, 'matches')
    """

    overrides: tuple[Override, ...]
    steps: tuple[StepAB, ...]
    losses_a: tuple[float, ...]
    losses_b: tuple[float, ...]
    first: Divergence | None
    tolerance: Tolerance
    error_a: str | None = None
    error_b: str | None = None
    trace_a: Trace | None = field(default=None, repr=False)
    trace_b: Trace | None = field(default=None, repr=False)
    overrides_a: tuple[Override, ...] = ()

    @property
    def diverged(self) -> bool:
        """True when B differs from A beyond the tolerance (or only B failed)."""
        return self.first is not None

    @property
    def exit_code(self) -> int:
        """0: B matches A within the tolerance; 1: B diverges."""
        return 1 if self.diverged else 0

    def render(self, console: Any = None, limit: int = 25, show_all: bool = False) -> None:
        """Print the report's tables (as ``tpx-inspect ab`` does) to a rich console."""
        from rich.console import Console

        from tpx_inspect._ab_tables import print_report

        print_report(console or Console(width=200), self, limit, show_all)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (NaN and infinities as strings)."""
        from tpx_inspect._ab_json import report_json

        return report_json(self)


def seed_everything(seed: int) -> None:
    """Seed P10's generator, NumPy's legacy global one and Python's ``random``.

    >>> seed_everything(3); a = random.random(); seed_everything(3); a == random.random()
    True
    """
    p10.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def run_once(
    script: str,
    args: Sequence[str],
    overrides: Sequence[Override],
    seed: int,
    name: str = "",
    **capture: Any,
) -> tuple[Trace, list[float], ScriptResult]:
    """Run ``script`` once under capture (and ``overrides``); its trace, losses and result
    (see the module's example; :func:`run_ab` runs it twice)."""
    cap = Capture(name=name or Path(script).stem, **capture)
    losses = LossRecorder()
    seed_everything(seed)
    with tpx.add_observer(losses), apply_overrides(overrides):
        result = run_captured(cap, script, list(args))
    return cap.trace, losses.losses, result


def run_ab(
    script: str,
    args: Sequence[str],
    overrides: Sequence[Override],
    *,
    seed: int = 0,
    steps: str | Policy = "first:5",
    tolerance: Tolerance = DEFAULT_TOLERANCE,
    values: str = "small",
    value_limit: int = 1 << 17,
    overrides_a: Sequence[Override] = (),
) -> ABReport:
    """Run ``script`` as it is (A) and with ``overrides`` (B), same seed, and compare.
    ``overrides_a`` applies to run A (an experiment between two replacements)."""
    opts = {
        "policy": Policy.parse(steps), "values": values, "value_limit": value_limit,
        "timing": True,
    }  # fmt: skip
    stem = Path(script).stem
    trace_a, losses_a, res_a = run_once(script, args, overrides_a, seed, f"A {stem}", **opts)
    if not res_a.ok:
        raise ABError(f"run A of {script} failed (exit {res_a.exit_code}): {res_a.error}")
    trace_b, losses_b, res_b = run_once(script, args, overrides, seed, f"B {stem}", **opts)
    steps_ab = _pair(trace_a, trace_b)
    first = first_divergence(steps_ab, tolerance)
    if first is None and not res_b.ok:
        first = Divergence(len(losses_b), "error", f"run B failed: {res_b.error}")
    if first is None and len(losses_a) != len(losses_b):
        first = Divergence(min(len(losses_a), len(losses_b)), "structure", "step counts differ")
    return ABReport(
        tuple(overrides), steps_ab, tuple(losses_a), tuple(losses_b), first, tolerance,
        None, None if res_b.ok else res_b.error, trace_a, trace_b, tuple(overrides_a),
    )  # fmt: skip


def _pair(a: Trace, b: Trace) -> tuple[StepAB, ...]:
    by_step = {g.step: g for g in b.graphs if g.kind == "backward"}
    out = []
    for ga in a.graphs:
        gb = by_step.get(ga.step)
        if ga.kind == "backward" and gb is not None:
            out.append(compare_graphs(ga, gb))
    return tuple(out)
