"""Lowering an optimizer step (``SGD``, ``Adam``, ``AdamW`` of :mod:`tpx.optim`) into plan
kernels.

While a compiled call records, ``opt.step()`` runs eagerly as always, but its kernel calls
are recorded into a segment of their own. The optimizer splits each parameter's update into
a Python part, ``_advance(group, state)`` (step counters; the numbers the update uses: ``lr``,
``1 - b1``, ``sqrt(1 - b2**t)``...), and a tensor part, ``_apply`` (kernels only). Each number
``_advance`` returns is handed to ``_apply`` as a fresh float object, so the recorder can tell
which kernel operand is which number (by identity) and turn it into a numbered scalar buffer.
At every replay a generated prologue calls the optimizer's own ``_advance`` on the live
groups and state (schedulers and user edits of ``param_groups`` are honoured), puts the
numbers and the state tensors' arrays (momentum buffers, ``exp_avg``...) into their buffers,
and the segment's kernels run: the same kernels on the same values as the eager step.

Before that the prologue compares the optimizer's ``_plan_token()`` (groups, the options
that choose kernels, the state's keys, shapes and dtypes) with the recorded one, and checks
that each ``.grad`` the plan did not set itself is None or set as when recorded; when either
differs (a param group added, a state loaded with other keys) the ``.grad`` the plan set are
written back, the step runs eagerly for that call and the plan is recorded again at the next
call. The ``.grad`` are otherwise not written back before the step (a ``zero_grad()`` after
it, which sets them to None in the plan, lets them die inside the plan). Whatever
the lowering cannot name (an operand that is not a Python float from ``_advance``, a tensor
made inside the step, an optimizer without the split) makes the step an eager island, with
one warning naming the reason.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tpx._plan import OPTSTATE, SCALAR, Segment, Slot
from tpx._record_source import Stop, user_line

RETRY = "the step creates the optimizer's state (its first step)"
INLINE = "zero_grad(set_to_none=True): the .grad set to None, written back as any .grad"


def _copy(v: float) -> float:
    """A new float object with the same bits (kernel operands are told apart by identity)."""
    return struct.unpack("d", struct.pack("d", v))[0]


def lowering_reason(fn: Any, args: tuple, kwargs: dict) -> str | None:
    """Why the eager island ``fn(*args, **kwargs)`` is not lowered; None when it is, and
    ``""`` when it is no optimizer step at all (zero_grad, a scheduler, clipping)."""
    opt = args[0] if args else None
    if not hasattr(opt, "_plan_token"):
        return ""
    if getattr(fn, "__name__", "") == "zero_grad":
        to_none = args[1] if len(args) > 1 else kwargs.get("set_to_none", True)
        return INLINE if to_none is True else ""
    if getattr(fn, "__name__", "") != "step":
        return ""
    name = type(opt).__name__
    base = next(k for k in type(opt).__mro__ if "_plan_token" in vars(k))
    if type(opt)._update is not base._update or type(opt)._apply is base._apply:
        return f"{name} is not lowered into plan kernels (SGD, Adam and AdamW are)"
    if any(a is not None for a in args[1:]) or any(v is not None for v in kwargs.values()):
        return f"{name}.step gets a closure"
    for group in opt.param_groups:
        for i, p in enumerate(group["params"]):
            index = _index(opt, group, i)
            if p.grad is not None and not opt._ready(group, opt.state.get(index, {})):
                return RETRY
    return None


def param_ids(opt: Any) -> tuple:
    """The ids of ``opt``'s parameters, per group: a plan in which its ``zero_grad()`` set
    them to None is only replayed while they are the same (see ``generate_guard``)."""
    return tuple([tuple([id(p) for p in g["params"]]) for g in opt.param_groups])


def _index(opt: Any, group: dict, k: int) -> int:
    """The state index of parameter ``k`` of ``group`` (parameters are numbered across
    groups, as ``Optimizer.step`` does)."""
    start = 0
    for g in opt.param_groups:
        if g is group:
            return start + k
        start += len(g["params"])
    raise AssertionError("group not in its optimizer")


def record_step(rec: Any, fn: Any, args: tuple, kwargs: dict) -> Any:
    """Record an optimizer step's kernels into a segment of their own with a generated
    prologue; when the lowering fails the segment is an eager island instead."""
    seg = Segment([])
    rec.segments.append(seg)
    seg.island_index = len(rec.island_results)
    rec.island_results.append(None)
    low = rec.lowering = Lowering(rec, args[0], seg)
    try:
        result = low.run(fn, args, kwargs)
    finally:
        rec.lowering = None
    rec.island_results[seg.island_index] = result
    if low.failed is None:
        seg.prologue, seg.fallback = low.prologue(), (fn, args, kwargs)
        seg.fallback_writeback = low.changes
        rec.optimizers.append(args[0])
    rec.segments.append(Segment([]))
    rec.mark = 0
    if low.failed is not None:  # NOTE: the step already ran eagerly: an island from now on
        rec.notes.append((low.failed, low.where))
        seg.steps, seg.island = [], (fn, args, kwargs)
        rec.segments[-3].writeback += low.changes  # NOTE: the island sees them, as eager
        rec.rebind_holders()
    return result


class Lowering:
    """The recording of one optimizer step's kernels: its scalar and state buffers, the
    label of each kernel, and what made the lowering fail."""

    def __init__(self, rec: Any, opt: Any, seg: Segment) -> None:
        self.rec, self.opt, self.seg = rec, opt, seg
        self.token = opt._plan_token()
        self.failed: str | None = None
        self.named: dict[int, int] = {}  # id of a fresh float -> its scalar slot
        self.keep: list[Any] = []  # NOTE: the fresh floats stay alive, so ids stay unique
        self.params: list[tuple[int, int, list, list]] = []  # (group, index, scalars, state)
        self.where = user_line()
        self.label_from = 0
        # NOTE: no write-back before the step: the .grad changed since the last boundary are
        # written back only when the step falls back to eager (they may die inside the plan)
        self.changes = rec.grad_changes()
        self.grad_checks = self._grad_checks()

    def _grad_checks(self) -> list[tuple[int, int, bool]]:
        """(group, position, is None) of each parameter whose ``.grad`` the plan did not set
        since the last boundary: the live ``.grad`` then tells, at a replay, whether the
        step updates it (the others are the plan's own)."""
        rec, changed = self.rec, {h for h, _ in self.changes}
        checks = []
        for gi, group in enumerate(self.opt.param_groups):
            for j, p in enumerate(group["params"]):
                h = rec.holder_index.get(id(p))
                if h is None or h not in changed:
                    checks.append((gi, j, p.grad is None))
        return checks

    def fail(self, reason: str) -> None:
        if self.failed is None:
            self.failed = reason

    # -- during the eager step ------------------------------------------------------------------
    def run(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """Run the eager step with ``_advance`` wrapped (its numbers named)."""
        opt = self.opt
        original = opt._advance
        opt._advance = self._advance(original)
        try:
            return fn(*args, **kwargs)
        finally:
            del opt._advance
            self._label()

    def _advance(self, original: Callable) -> Callable:
        def advance(group: dict, state: dict) -> dict:
            self._label()
            numbers = original(group, state)
            gi = next(k for k, g in enumerate(self.opt.param_groups) if g is group)
            index = next(i for i, s in self.opt.state.items() if s is state)
            fresh, scalars = {}, []
            for name, v in numbers.items():
                if v.__class__ is not float:
                    self.fail(f"{name}={v!r} is a {type(v).__name__}, not a Python float")
                    continue
                fresh[name] = _copy(v)
                self.keep.append(fresh[name])
                scalars.append((name, self._scalar_slot(fresh[name], name)))
            arrays = [
                (key, self._state_slot(index, key, v))
                for key, v in state.items()
                if hasattr(v, "_value")
            ]
            self.params.append((gi, index, scalars, arrays))
            return numbers if self.failed is not None else fresh

        return advance

    def _scalar_slot(self, fresh: float, name: str) -> int:
        rec = self.rec
        i = len(rec.slots)
        rec.slots.append(Slot(SCALAR, (), "float", 0, name))
        rec.dtype_of_slot[i] = None
        self.named[id(fresh)] = i
        return i

    def _state_slot(self, index: int, key: str, t: Any) -> int:
        rec, raw = self.rec, t._value
        i = rec.slot_of.get(id(raw._data))
        if i is None:
            i = rec._new_slot(raw._data, raw._backend, OPTSTATE, (index, key), False)
        elif rec.slots[i].kind != OPTSTATE:
            self.fail(f"the state {key!r} of parameter {index} is also another buffer")
        return i

    def scalar(self, a: Any, op: Any) -> int:
        """The scalar slot of a Python number given to a kernel (it must come from
        ``_advance``: any other number would be fixed in the plan)."""
        i = self.named.get(id(a))
        if i is None or self.rec.slots[i].kind != SCALAR:
            raise Stop(f"{op.value} gets the number {a!r}, which the optimizer's _advance did not")
        return i

    def check_params(self, op: Any, params: dict) -> None:
        if any(id(v) in self.named for v in params.values()):
            raise Stop(f"{op.value} gets a scalar of _advance as a parameter")

    def _label(self) -> None:
        """Name the kernels recorded since the last parameter: optimizer, group, index."""
        steps = self.seg.steps
        if self.params:
            gi, index, _, _ = self.params[-1]
            node = f"{type(self.opt).__name__} group {gi} param {index}"
            for k in range(self.label_from, len(steps)):
                steps[k] = replace(steps[k], origin=("optimizer", None, node, self.where))
        self.label_from = len(steps)

    # -- after it -------------------------------------------------------------------------------
    def prologue(self) -> Callable[[list], bool]:
        """The generated ``prologue(b)``: the token check, then per parameter ``_advance``
        on the live group and state, its numbers and state arrays put into ``b``."""
        lines = [
            "def prologue(b):",
            "    if opt._plan_token() != token:",
            "        return False",
            "    groups, state, advance = opt.param_groups, opt.state, opt._advance",
        ]
        for gi, j, none in self.grad_checks:
            lines.append(f"    if (groups[{gi}]['params'][{j}].grad is None) is not {none}:")
            lines.append("        return False")
        for gi, index, scalars, arrays in self.params:
            lines.append(f"    s = state.setdefault({index}, {{}})")
            lines.append(f"    n = advance(groups[{gi}], s)")
            lines += [f"    b[{i}] = n[{name!r}]" for name, i in scalars]
            lines += [f"    b[{i}] = s[{key!r}]._value._data" for key, i in arrays]
        lines.append("    return True")
        names: dict[str, Any] = {"opt": self.opt, "token": self.token}
        source = "\n".join(lines)
        exec(compile(source, "<tpx plan optimizer prologue>", "exec"), names)
        fn = names["prologue"]
        fn.source = source  # type: ignore[attr-defined]  # NOTE: for inspection and tests
        return fn
