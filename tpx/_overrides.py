"""Replace one gradient rule for a block of code, in the calling thread only.

``with tp.override_rule(Op.TANH, my_vjp):`` makes every tanh node recorded by this thread
inside the block use ``my_vjp`` in its backward, and save what ``my_vjp`` declares
(``save``/``save_output``): the rule is chosen when the node is recorded, as the saved values
are, so the memory a rule keeps is real. A backward that runs after the block still uses the
rule its nodes were recorded with.

Every node recorded under an override, of a rule (:func:`override_rule`) or of a kernel
(:func:`p10.override_kernel`), says so in ``node.overrides``: ``{"rule": "module:function",
"kernel": "module:function"}`` (only the keys that apply); other nodes have None. Recording
pays one check of a thread-local attribute when nothing is overridden.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import p10
from p10._overrides import describe
from tpx import _mode
from tpx._errors import DefinitionError
from tpx._graph import Rule
from tpx._mode import state
from tpx.rules import RULES

__all__ = ["Overrides", "RuleOverrideError", "override_rule"]


class RuleOverrideError(DefinitionError):
    """An override that names an unknown op, or a rule of the wrong signature.

    >>> with override_rule("tanhh", lambda ctx, g: (g,)):
    ...     pass
    Traceback (most recent call last):
    ...
    tpx._overrides.RuleOverrideError: override_rule: unknown op name 'tanhh'
    """


class Overrides:
    """What the calling thread overrides: rules by op, kernels by (backend, op).

    ``state.overrides`` holds one (None when nothing is overridden); recording asks it for the
    rule of a node and for the ``overrides`` record the node keeps.
    """

    __slots__ = ("_marks", "kernels", "rules")

    def __init__(self, rules: dict, kernels: dict | None) -> None:
        self.rules: dict[Any, tuple[Rule, str]] = rules
        self.kernels: dict[tuple, tuple[Any, str]] = kernels or {}
        self._marks: dict[tuple, dict[str, str] | None] = {}

    def rule(self, op: Any, default: Rule | None) -> Rule | None:
        """The rule that a node of ``op`` recorded now gets."""
        found = self.rules.get(op)
        return default if found is None else found[0]

    def mark(self, op: Any, backend: Any) -> dict[str, str] | None:
        """The ``overrides`` record of a node of ``op`` computed on ``backend`` (one shared,
        read-only dict per op and backend), or None when neither is overridden."""
        key = (op, backend)
        if key in self._marks:
            return self._marks[key]
        mark: dict[str, str] = {}
        if op in self.rules:
            mark["rule"] = self.rules[op][1]
        k = self.kernels.get((backend, op))
        if k is not None:
            mark["kernel"] = k[1]
        self._marks[key] = mark or None
        return mark or None


# NOTE: the rule overrides live here per thread; the kernel overrides in p10, which tells this
# module (in the same thread) when they change, so that state.overrides covers both
def _refresh(rules: dict | None, kernels: dict | None) -> None:
    was_on = state.overrides is not None
    state.rule_overrides = rules
    state.overrides = Overrides(rules or {}, kernels) if (rules or kernels) else None
    if (state.overrides is not None) != was_on:
        _mode.count_local_setting(-1 if was_on else 1)


def _on_kernels(kernels: dict | None) -> None:
    _refresh(getattr(state, "rule_overrides", None), kernels)


p10.add_kernel_override_listener(_on_kernels)


@contextmanager
def override_rule(
    op: Any,
    vjp: Callable[..., tuple] | Rule,
    *,
    save: tuple[int, ...] | None = None,
    save_output: bool | None = None,
) -> Iterator[Rule]:
    """Use ``vjp`` as the gradient rule of ``op`` for the nodes recorded in this block, in this
    thread only; nestable, restored on error.

    ``vjp(ctx, g)`` returns one gradient (or None) per input, as every rule. ``save`` lists the
    inputs it reads from ``ctx.inputs`` and ``save_output`` whether it reads ``ctx.output``;
    left out, they are those of the rule it replaces. ``vjp`` may also be a :class:`tpx.Rule`.

    >>> import tpx as tp
    >>> from p10 import Op
    >>> def tanh_from_input(ctx, g):
    ...     t = tp.tanh(ctx.inputs[0])
    ...     return (g * (1 - t * t),)
    >>> x = tp.asarray([0.5], requires_grad=True)
    >>> with tp.override_rule(Op.TANH, tanh_from_input, save=(0,), save_output=False):
    ...     y = x.tanh()
    >>> y.grad_fn.overrides["rule"], len(y.grad_fn.saved_tensors)
    ('tpx._overrides:tanh_from_input', 1)
    >>> y.sum().backward(); round(x.grad.item(), 6)
    0.786448
    """
    op = _resolve_op(op)
    rule = _make_rule(op, vjp, save, save_output)
    previous = getattr(state, "rule_overrides", None)
    kernels = p10.kernel_overrides()
    _refresh({**(previous or {}), op: (rule, describe(rule.real_vjp))}, kernels)
    try:
        yield rule
    finally:
        _refresh(previous, p10.kernel_overrides())


def _resolve_op(op: Any) -> Any:
    if isinstance(op, str):
        try:
            return p10.op_from_name(op)
        except p10.P10Error as e:
            raise RuleOverrideError(f"override_rule: {e}") from None
    if not isinstance(op, p10.Op | p10.CustomOp):
        raise RuleOverrideError(f"override_rule: expected a p10.Op or an op name, got {op!r}")
    return op


def _current(op: Any) -> Rule | None:
    rules = getattr(state, "rule_overrides", None)
    if rules and op in rules:
        return rules[op][0]
    return RULES.get(op)


def _make_rule(op: Any, vjp: Any, save: Any, save_output: Any) -> Rule:
    current = _current(op)
    if current is None:
        raise RuleOverrideError(
            f"override_rule({op.value}): the op has no gradient rule to replace; add one with "
            "tpx.register_rule"
        )
    save_from = None  # variadic saves come with the save they replace (see Rule.save_from)
    if isinstance(vjp, Rule):
        if save is None:
            save, save_from = vjp.save, vjp.save_from
        save_output = vjp.save_output if save_output is None else save_output
        vjp = vjp.vjp
    _check_vjp(op, vjp)
    if save is None:
        save, save_from = current.save, current.save_from
    save = tuple(save)
    save_output = current.save_output if save_output is None else bool(save_output)
    arity = p10.OP_INFO[op].arity if isinstance(op, p10.Op) else op.arity
    if arity is not None and any(not isinstance(i, int) or not 0 <= i < arity for i in save):
        raise RuleOverrideError(
            f"override_rule({op.value}): save={save} must list input positions in 0..{arity - 1}"
        )
    return Rule(vjp, save, save_output, save_from=save_from)


def _check_vjp(op: Any, vjp: Any) -> None:
    if not callable(vjp):
        raise RuleOverrideError(f"override_rule({op.value}): vjp must be callable, got {vjp!r}")
    try:
        inspect.signature(vjp).bind(None, None)
    except TypeError as e:
        raise RuleOverrideError(
            f"override_rule({op.value}): vjp must take (ctx, grad_output): {e}"
        ) from None
    except ValueError:
        pass  # builtins without a signature
