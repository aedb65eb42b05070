"""Compiled calls as a tool sees them: :meth:`CompiledFunction.intercept` routes every call
of every compiled function through a handler, which gets a :class:`CompiledCall` and decides
to record, replay or run it eagerly (``tpx-inspect check`` replays next to eager calls)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import p10
from tpx import _mode, _record
from tpx._compile_key import guard, signature
from tpx._plan import Plan, replay, resolve

if TYPE_CHECKING:
    from tpx._compile import CompiledFunction

interceptors: list[Callable[[CompiledCall], Any]] = []
"""The handlers of :func:`intercept`, the last one active."""


def intercept(handler: Callable[[CompiledCall], Any]) -> p10.Handle:
    """Route every compiled call through ``handler``; the handle's ``remove()`` ends it."""
    interceptors.append(handler)

    def remove() -> None:
        if handler in interceptors:
            interceptors.remove(handler)

    return p10.Handle(remove)


class CompiledCall:
    """One call of a compiled function, as an interceptor (:meth:`CompiledFunction.intercept`)
    sees it: it can run the call eagerly, record its plan, or replay the plan."""

    def __init__(self, compiled: CompiledFunction, args: tuple, kwargs: dict) -> None:
        self.compiled, self.args, self.kwargs = compiled, args, kwargs
        self.flat: list[Any] = []
        self.key, self.reason = signature(args, kwargs, self.flat)
        if self.reason is None and _mode.state.anomaly:
            self.reason = "anomaly mode (tp.detect_anomaly) is on"

    @property
    def plan(self) -> Plan | None:
        """The plan that a replay of this call would run (None: none, or its guards fail)."""
        entry = self.compiled._plans.get(self.key) if self.reason is None else None
        return entry if isinstance(entry, Plan) and guard(entry, self.flat) else None

    def eager(self) -> Any:
        """Run the function eagerly (observers see it, nothing is recorded)."""
        self.compiled.stats.eager_calls += 1
        return self.compiled.fn(*self.args, **self.kwargs)

    def record(self) -> Any:
        """Run the function eagerly while recording its plan (or eagerly with the one
        warning, on a graph break); observers see the eager call."""
        if self.reason is not None:
            self.compiled._warn(self.reason, _record.user_line(2))
            return self.eager()
        return self.compiled._record(self.key, self.flat, self.args, self.kwargs)

    def replay(self) -> Any:
        """Replay :attr:`plan` (observers see nothing: no graph is made)."""
        plan = self.plan
        if plan is None:
            raise RuntimeError("CompiledCall.replay: this call has no plan (record it first)")
        self.compiled.stats.replays += 1
        return replay(plan, self.flat)

    def state(self) -> list[tuple[str, Any]]:
        """The state the call changes, named, as it is now: the plan's state tensors
        (parameters and their ``.grad``), then the state of each optimizer and scheduler
        the plan's eager islands run (momentum buffers, moments, step counts, learning
        rates; numbers as they are). Compare it after a replay and after an eager call."""
        plan = self.plan or self.compiled._plans.get(self.key)
        if not isinstance(plan, Plan):
            return []
        holders = resolve(plan.holders, self.flat)
        out: list[tuple[str, Any]] = []
        for h, t in enumerate(holders):
            out += [(f"state {h} {tuple(t.shape)}", t), (f"state {h} .grad", t.grad)]
        return out + island_state(plan)


def island_state(plan: Plan) -> list[tuple[str, Any]]:
    """The ``state_dict()`` of each optimizer and scheduler that ``plan``'s islands are
    methods of (momentum buffers, moments, step counts, learning rates), flattened into
    named values: arrays and numbers as the state dict holds them."""
    owners: list[Any] = []
    for seg in plan.segments:
        island = seg.island if seg.island is not None else seg.fallback
        args = island[1] if island is not None else ()
        # NOTE: a method marked eager_island gets its object first
        if (
            args
            and callable(getattr(args[0], "state_dict", None))
            and all(args[0] is not o for o in owners)
        ):
            owners.append(args[0])
    out: list[tuple[str, Any]] = []
    for k, o in enumerate(owners):
        _flatten(f"island {k} {type(o).__name__}", o.state_dict(), out)
    return out


def _flatten(name: str, value: Any, out: list[tuple[str, Any]]) -> None:
    if isinstance(value, dict):
        for k in sorted(value, key=str):
            _flatten(f"{name} {k}", value[k], out)
    elif isinstance(value, (list, tuple)):
        for k, v in enumerate(value):
            _flatten(f"{name} {k}", v, out)
    else:
        out.append((name, value))
