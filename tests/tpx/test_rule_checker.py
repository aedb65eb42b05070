"""The rule checker is only trusted because these tests show it failing on planted bugs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import p10
import tpx as tp
from p10 import Op
from tests.helpers.fd import GradcheckError, check_vjp
from tests.helpers.rule_cases import CASES
from tests.tpx.test_rules import run_case, run_gradgrad_case
from tpx.rules import RULES, unbroadcast


def _cases(op: Op, *, broadcasting: bool | None = None) -> list[Any]:
    found = [c for c in CASES if c.op is op]
    if broadcasting is not None:
        found = [c for c in found if _broadcasts(c) is broadcasting]
    assert found, f"no case for {op.value}"
    return found


def _broadcasts(c: Any) -> bool:
    shapes = [a.shape for a in c.inputs()]
    return len(shapes) == 2 and shapes[0] != shapes[1]


def _wrong_sin(ctx: Any, g: Any) -> tuple:
    return (g * p10.sin(ctx.inputs[0]),)  # planted bug: sin' = sin


def _mean_unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    # planted bug: averages over broadcast axes instead of summing (exact when none)
    return unbroadcast(g, shape) * (float(np.prod(shape)) / float(np.prod(g.shape)))


def _mul_wrong_under_broadcasting(ctx: Any, g: Any) -> tuple:
    (x, y), (s0, s1) = ctx.inputs, ctx.input_shapes
    return _mean_unbroadcast(g * y, s0), _mean_unbroadcast(g * x, s1)


def _sin_not_recorded(ctx: Any, g: Any) -> tuple:
    # planted bug: right values, but computed outside P10 so create_graph cannot see through
    # it: second derivatives come out wrong.
    cos = p10.asarray(np.cos(np.asarray(ctx.inputs[0])))
    return (g * cos,)


@pytest.mark.parametrize("mode", ["full", "random"])
def test_checker_catches_a_wrong_rule_and_names_the_op(monkeypatch, mode: str) -> None:
    monkeypatch.setitem(RULES, Op.SIN, tp.Rule(_wrong_sin, (0,)))
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    with pytest.raises(GradcheckError, match=r"rule of sin \(SinBackward\)"):
        check_vjp(p10.sin, [x], mode=mode)


def test_sweep_fails_on_every_sin_case_with_a_planted_rule(monkeypatch) -> None:
    handle = tp.register_rule(Op.SIN, _wrong_sin, save=(0,))
    try:
        for c in _cases(Op.SIN):
            with pytest.raises(GradcheckError, match=r"sin-\dd: rule of sin") as info:
                run_case(c)
            assert "d output" in str(info.value) and "d input 0" in str(info.value)
    finally:
        handle.remove()
    for c in _cases(Op.SIN):  # the real rule is back and passes
        run_case(c)


def test_full_mode_locates_the_wrong_element(monkeypatch) -> None:
    def wrong_at_one(ctx: Any, g: Any) -> tuple:
        bump = p10.asarray(np.array([0.0, 0.0, 1.0, 0.0]))
        return (g * p10.cos(ctx.inputs[0]) + bump,)

    monkeypatch.setitem(RULES, Op.SIN, tp.Rule(wrong_at_one, (0,)))
    with pytest.raises(GradcheckError, match=r"d output\[\d\] / d input 0\[2\]"):
        check_vjp(p10.sin, [np.linspace(-1.0, 1.0, 4)])


def test_a_rule_wrong_only_under_broadcasting_is_caught(monkeypatch) -> None:
    monkeypatch.setitem(RULES, Op.MUL, tp.Rule(_mul_wrong_under_broadcasting, (0, 1)))
    for c in _cases(Op.MUL, broadcasting=False):
        run_case(c)  # the planted rule is right on equal shapes...
    for c in _cases(Op.MUL, broadcasting=True):
        with pytest.raises(GradcheckError, match=r"rule of mul \(MulBackward\)"):
            run_case(c)  # ...and caught on every broadcasting case of the table


def test_random_mode_catches_a_broadcasting_bug(monkeypatch) -> None:
    monkeypatch.setitem(RULES, Op.MUL, tp.Rule(_mul_wrong_under_broadcasting, (0, 1)))
    x, y = np.ones((2, 3)) * 0.5, np.linspace(1.0, 2.0, 3)
    with pytest.raises(GradcheckError, match="random direction"):
        check_vjp(p10.multiply, [x, y], mode="random")


def test_second_order_check_catches_a_rule_invisible_to_create_graph(monkeypatch) -> None:
    monkeypatch.setitem(RULES, Op.SIN, tp.Rule(_sin_not_recorded, (0,)))
    c = _cases(Op.SIN)[-1]
    run_case(c)  # first order is right...
    with pytest.raises(GradcheckError, match=r"rule of sin \(second order"):
        run_gradgrad_case(c)  # ...second order is not


def test_checker_passes_on_the_real_rules() -> None:
    check_vjp(p10.multiply, [np.ones((2, 3)), np.linspace(1.0, 2.0, 3)])
    check_vjp(p10.multiply, [np.ones((2, 3)), np.linspace(1.0, 2.0, 3)], mode="random")
