"""The Python that replays one segment of a plan: a generated function ``run(b)``.

Slots that live only inside the segment are local variables (names reused once a slot is
dead), the others live in the buffer list ``b``; kernels, constants and parameter values are
globals of the generated code, and parameters are passed as keywords (no dict per call). A
kernel whose result only the very next step reads is written inside that step's call
(``matmul(g, permute(w, axes=...))``): the same kernels run in the same order, without a
variable. A step that reuses a dying operand in place (see
:func:`tpx._plan_passes._reuse_dying`) calls the backend's in-place kernel directly.
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Callable
from typing import Any

from tpx._plan import ARG, Segment, Slot, Step, fill_key, key_slots
from tpx._plan_direct import DST, direct_form


def generate(seg: Segment, slots: list[Slot], backend_of: dict[int, Any]) -> Callable[[list], None]:
    """The function ``run(b)`` that executes ``seg``'s steps on the buffer list ``b``
    (``slots``, ``backend_of``: the plan's buffers, for the direct NumPy calls of
    :mod:`tpx._plan_direct`)."""
    return _Writer(seg, slots, backend_of).function()


class _Writer:
    """Writes the source of one segment's ``run(b)``, then compiles it."""

    def __init__(self, seg: Segment, slots: list[Slot], backend_of: dict[int, Any]) -> None:
        self.seg = seg
        self.slots = slots
        self.backend_of = backend_of
        self.names: dict[str, Any] = {"fill": fill_key}
        self.known: dict[int, str] = {}  # id of a global value -> its name
        self.local = local_slots(seg)
        self.var: dict[int, str] = {}
        self.pool: list[str] = []
        self.count = 0
        self.inline: dict[int, str] = {}  # slot -> the call that makes it, written inline
        self.lines = ["def run(b):"]

    def function(self) -> Callable[[list], None]:
        deferred: list[int] = []  # NOTE: an inlined step's inputs die after its reader
        for k, (step, frees) in enumerate(zip(self.seg.steps, self.seg.frees)):
            call = self.call(step)
            if self._inlined(k, step):
                self.inline[step.out] = call
                deferred += frees
                continue
            self.emit(step, call, [*frees, *deferred])
            deferred = []
        self.lines.append("    return None")
        source = "\n".join(self.lines)
        exec(compile(source, "<tpx plan>", "exec"), self.names)
        run = self.names["run"]
        run.source = source  # type: ignore[attr-defined]  # NOTE: for inspection and tests
        return run

    def glob(self, value: Any, prefix: str) -> str:
        name = self.known.get(id(value))
        if name is None:
            name = self.known[id(value)] = f"{prefix}{len(self.known)}"
            self.names[name] = value
        return name

    def literal(self, value: Any, first: str) -> str:
        """An argument of a direct NumPy call (see :mod:`tpx._plan_direct`)."""
        if value is DST:
            return first
        return repr(value) if value is None or value.__class__ is bool else self.glob(value, "p")

    def ref(self, i: int) -> str:
        if i in self.inline:
            return self.inline.pop(i)
        return self.var.get(i, f"b[{i}]")

    def call(self, step: Step) -> str:
        kernel = getattr(step.kernel, "in_place_kernel", None) or step.kernel
        form = direct_form(kernel, step, self.slots, self.backend_of)
        if form is not None and any(x is DST for x in form[1]) and step.inputs[0] in self.inline:
            form = None  # NOTE: the destination is a call written inline: not written twice
        args = [self.ref(x) if x.__class__ is int else self.glob(x[1], "c") for x in step.inputs]
        if form is not None:
            callee, extra = form
            args += [self.literal(x, args[0]) for x in extra]
            return f"{self.glob(callee, 'k')}({', '.join(args)})"
        if step.kind == "setitem":
            args.insert(1, f"fill(b, {self.glob(step.params['key'], 'key')})")
        elif step.params and all(_plain_name(k) for k in step.params):
            args += [f"{k}={self.glob(v, 'p')}" for k, v in step.params.items()]
        elif step.params:
            args.append(f"**{self.glob(step.params, 'p')}")
        return f"{self.glob(kernel, 'k')}({', '.join(args)})"

    def emit(self, step: Step, call: str, frees: list[int]) -> None:
        if step.out is None:
            self.lines.append(f"    {call}")
        elif hasattr(step.kernel, "in_place_kernel"):  # writes into its first input
            self.lines.append(f"    {call}")
            self.assign(step.out, self.ref(step.inputs[0]))
        else:
            self.assign(step.out, call)
        for i in frees:
            if i in self.var:
                self.lines.append(f"    del {self.var[i]}")
                self.pool.append(self.var.pop(i))
            elif i not in self.local:  # NOTE: a local slot not in var was written inline
                self.lines.append(f"    b[{i}] = None")

    def assign(self, out: int, value: str) -> None:
        if out in self.local:
            self.var[out] = self.pool.pop() if self.pool else self._fresh()
        self.lines.append(f"    {self.ref(out)} = {value}")

    def _fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def _inlined(self, k: int, step: Step) -> bool:
        """Whether step ``k``'s result is read once, by the next step only, and dies there
        (liveness frees a slot after its last reader)."""
        steps, out = self.seg.steps, step.out
        if k + 1 >= len(steps) or step.kind != "kernel" or out not in self.local:
            return False
        following = steps[k + 1]
        if hasattr(step.kernel, "in_place_kernel") or following.kind == "setitem":
            return False
        if following.inputs.count(out) != 1 or hasattr(following.kernel, "in_place_kernel"):
            return False
        return out in self.seg.frees[k + 1]


def _plain_name(name: Any) -> bool:
    return (
        isinstance(name, str)
        and name.isidentifier()
        and not keyword.iskeyword(name)
        and not hasattr(builtins, name)
    )


def local_slots(seg: Segment) -> set[int]:
    """Slots made and freed inside ``seg`` and not read through a setitem key."""
    made = {s.out for s in seg.steps if s.out is not None}
    freed = {i for frees in seg.frees for i in frees}
    keys = {i for s in seg.steps if s.kind == "setitem" for i in key_slots(s.params["key"])}
    return (made & freed) - keys


# NOTE: where a tensor keeps its backend array (read at every replay, so written into the code)
_TPX_DATA = "._value._data"
_P10_DATA = "._data"


def generate_bind(
    slots: list[Slot], indices: list[int], arg_is_p10: tuple[bool, ...]
) -> Callable[[list, list, list], None]:
    """``bind(b, flat, h)``: put the arrays of the slots ``indices`` into ``b``: arguments
    from ``flat`` (the call's flattened tensors), state values from the holders ``h``."""
    lines = ["def bind(b, flat, h):"]
    for i in indices:
        slot = slots[i]
        if slot.kind == ARG:
            data = _P10_DATA if arg_is_p10[slot.source] else _TPX_DATA
            lines.append(f"    b[{i}] = flat[{slot.source}]{data}")
        else:
            h, attr = slot.source
            owner = f"h[{h}]" if attr == "data" else f"h[{h}].grad"
            lines.append(f"    b[{i}] = {owner}{_TPX_DATA}")
    lines.append("    return None")
    names: dict[str, Any] = {}
    exec(compile("\n".join(lines), "<tpx plan bind>", "exec"), names)
    return names["bind"]


def generate_guard(
    grad_checks: list[tuple[int, bool]], state_meta: list[tuple], param_guards: list = ()
) -> Callable[[list], bool]:
    """``guard(h)``: whether the holders ``h`` still look as when the plan was recorded:
    each checked ``.grad`` None or set as it was, each state value read at the start of the
    same shape and dtype, each optimizer whose ``zero_grad()`` the plan holds with the same
    parameters (one expression: a replay runs it at every call)."""
    names: dict[str, Any] = {}
    terms = [f"(h[{h}].grad is None) is {none}" for h, none in grad_checks]
    for k, (opt, ids) in enumerate(param_guards):
        names[f"o{k}"], names[f"i{k}"] = opt, ids
        terms.append(
            f"tuple([tuple([id(p) for p in g['params']]) for g in o{k}.param_groups]) == i{k}"
        )
    for k, (_, h, attr, shape, dtype) in enumerate(state_meta):
        names[f"s{k}"], names[f"d{k}"] = shape, dtype
        value = f"h[{h}]{_TPX_DATA}" if attr == "data" else f"h[{h}].grad{_TPX_DATA}"
        terms.append(f"{value}.shape == s{k}")
        terms.append(f"({value}.dtype is d{k} or {value}.dtype == d{k})")
    body = " and ".join(terms) or "True"
    exec(compile(f"def guard(h):\n    return {body}\n", "<tpx plan guard>", "exec"), names)
    return names["guard"]
