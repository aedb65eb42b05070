"""``tpx.compile``: record a function's kernels once per signature, then replay the plan.

The first call with a given signature (tensor shapes, dtypes, backends, which require grad,
the grad mode, the other arguments' values) runs eagerly while :mod:`tpx._record` records it;
later calls with that signature replay the lowered :class:`~tpx._plan.Plan`. What a plan
cannot express makes the function run eagerly for that signature, with one warning that names
the reason and the source line. Functions marked with :func:`eager_island` (optimizer steps,
``zero_grad``, schedulers, gradient clipping) run as Python inside the replay.
"""

from __future__ import annotations

import functools
import threading
import types
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import p10
from tpx import _record
from tpx._compile_call import CompiledCall, intercept, interceptors
from tpx._compile_key import global_reason, guard, holders, signature
from tpx._plan import Plan, replay
from tpx._plan_describe import describe, time_kernels
from tpx._plan_passes import lower, optimize
from tpx._record_wrap import recording

F = TypeVar("F", bound=Callable[..., Any])


class CompileWarning(UserWarning):
    """A compiled function runs eagerly (a graph break); the message names reason and line."""


@dataclass
class CompileStats:
    """Counters of one compiled function.

    >>> CompileStats().replays
    0
    """

    records: int = 0
    replays: int = 0
    eager_calls: int = 0
    evictions: int = 0
    guard_misses: int = 0


_EAGER = "eager"


class CompiledFunction:
    """A function that replays recorded plans; made by :func:`compile`.

    >>> import tpx as tp
    >>> f = tp.compile(lambda x: (x * x).sum())
    >>> [f(tp.ones(3)).item() for _ in range(2)], f.stats.replays
    ([3.0, 3.0], 1)
    """

    def __init__(self, fn: Callable[..., Any], cache_size: int = 8) -> None:
        if not callable(fn):
            raise TypeError(f"tpx.compile: expected a callable, got {type(fn).__name__}")
        if cache_size < 1:
            raise ValueError(f"tpx.compile: cache_size must be >= 1, got {cache_size}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.cache_size = cache_size
        self.stats = CompileStats()
        self._plans: OrderedDict[tuple, Plan | str] = OrderedDict()
        self._warned: set[str] = set()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # NOTE: this runs at every call: the common case (a replay) does the fewest steps
        if _record.active is not None:  # called while another function records: inline it
            return self.fn(*args, **kwargs)
        if interceptors:
            return interceptors[-1](CompiledCall(self, args, kwargs))
        reason = global_reason()
        flat: list[Any] = []
        key = None
        if reason is None:
            key, reason = signature(args, kwargs, flat)
        if reason is not None:
            self._warn(reason, _record.user_line(2))
            self.stats.eager_calls += 1
            return self.fn(*args, **kwargs)
        entry = self._plans.get(key)
        if entry.__class__ is Plan:
            if guard(entry, flat):
                self._plans.move_to_end(key)
                self.stats.replays += 1
                return replay(entry, flat)
            self.stats.guard_misses += 1
        elif entry is _EAGER:
            self.stats.eager_calls += 1
            return self.fn(*args, **kwargs)
        return self._record(key, flat, args, kwargs)

    def _record(self, key: tuple, flat: list, args: tuple, kwargs: dict) -> Any:
        rec = _record.Recorder(flat, holders(self.fn, args, kwargs))
        try:
            with recording(rec):
                result = self.fn(*args, **kwargs)
            plan = None
            if rec.stopped is None:
                try:
                    plan = lower(optimize(rec.finish(result)))
                except _record.Stop as e:
                    rec.stopped = (e.args[0], e.args[1] if len(e.args) > 1 else _record.user_line())
        finally:
            rec.close()
        self.stats.records += 1
        if plan is None or not rec.retry:  # NOTE: a step that made its state: record again
            self._store(key, _EAGER if plan is None else plan)
        if plan is None:
            assert rec.stopped is not None
            self._warn(*rec.stopped)
        for reason, where in rec.notes:
            self._warn(reason, where, "runs an optimizer step as an eager island")
        return result

    def _store(self, key: tuple, entry: Plan | str) -> None:
        self._plans[key] = entry
        self._plans.move_to_end(key)
        while len(self._plans) > self.cache_size:
            self._plans.popitem(last=False)
            self.stats.evictions += 1

    def _warn(self, reason: str, where: str, what: str = "runs eagerly") -> None:
        if reason in self._warned:
            return
        self._warned.add(reason)
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        warnings.warn(
            f"tpx.compile({name}) {what}: {reason} at {where}", CompileWarning, stacklevel=3
        )

    def plans(self) -> list[Plan]:
        """The recorded plans, least recently used first (signatures that run eagerly are
        left out)."""
        return [p for p in self._plans.values() if isinstance(p, Plan)]

    def has_plan(self, *args: Any, **kwargs: Any) -> bool:
        """Whether a plan is recorded for the signature of these arguments (its guards, such
        as which ``.grad`` are None, may still send the next call to record again).

        >>> import tpx as tp
        >>> f = tp.compile(lambda x: x * 2)
        >>> f.has_plan(tp.ones(2)), f(tp.ones(2)) is not None, f.has_plan(tp.ones(2))
        (False, True, True)
        """
        flat: list[Any] = []
        key, reason = signature(args, kwargs, flat)
        return reason is None and isinstance(self._plans.get(key), Plan)

    def describe(self) -> list[dict[str, Any]]:
        """:func:`tpx._plan.describe` of each plan."""
        return [describe(p) for p in self.plans()]

    def inspect_plan(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        """The description of the plan for this call's signature (recorded by one eager call
        when there is none yet), with the seconds of each kernel from one replay run step by
        step: the call's effects (in-place writes, ``.grad``, eager islands such as
        ``zero_grad``) happen as in a replay. None when the signature runs eagerly.

        >>> import tpx as tp
        >>> d = tp.compile(lambda x: (x * 2).exp()).inspect_plan(tp.ones(3))
        >>> [k["op"] for k in d["kernels"]], len(d["kernel_seconds"])
        (['mul', 'exp'], 2)
        """
        flat: list[Any] = []
        key, reason = signature(args, kwargs, flat)
        if reason is not None:
            return None
        if not isinstance(self._plans.get(key), Plan):
            self._record(key, flat, args, kwargs)
        plan = self._plans.get(key)
        if not isinstance(plan, Plan):
            return None
        plan.kernel_seconds = time_kernels(plan, flat)
        return describe(plan)

    @staticmethod
    def intercept(handler: Callable[[CompiledCall], Any]) -> p10.Handle:
        """Route every call of every compiled function through ``handler(call)``, which
        returns the call's result (a checker that replays plans against eager calls, as
        ``tpx-inspect check`` does); the handle's ``remove()`` ends it. Observers no longer
        make calls fall back to eager then: a :class:`CompiledCall` records with them.

        >>> import tpx as tp
        >>> seen = []
        >>> def handler(call):
        ...     seen.append(call.plan is None)
        ...     return call.record() if call.plan is None else call.replay()
        >>> f = tp.compile(lambda x: x * 2)
        >>> with tp.CompiledFunction.intercept(handler):
        ...     _ = [f(tp.ones(2)) for _ in range(2)]
        >>> seen
        [True, False]
        """
        return intercept(handler)


def compile(fn: F | None = None, *, cache_size: int = 8) -> Any:
    """Record ``fn`` once per signature and replay the recorded kernels on later calls; also
    a decorator (``@tp.compile`` or ``@tp.compile(cache_size=4)``).

    A replayed call computes bit for bit what the eager call computes (same kernels, same
    order) and writes the same ``.grad`` and parameter values. Tensors it returns carry no
    graph: put ``.backward()`` and the optimizer step inside ``fn``. Python values computed
    inside ``fn`` are fixed at record time (as in ``jax.jit``); pass what changes as tensor
    arguments.

    >>> import tpx as tp
    >>> w = tp.ones(3, requires_grad=True)
    >>> @tp.compile
    ... def step(x):
    ...     w.grad = None
    ...     loss = (w * x).sum()
    ...     loss.backward()
    ...     return loss
    >>> [step(tp.full((3,), 2.0)).item() for _ in range(3)], w.grad.tolist()
    ([6.0, 6.0, 6.0], [2.0, 2.0, 2.0])
    """
    if fn is None:
        return lambda f: CompiledFunction(f, cache_size)
    return CompiledFunction(fn, cache_size)


def eager_island(fn: F) -> F:
    """Mark ``fn`` to run as Python at every replay of a compiled function that calls it
    (an optimizer step, ``zero_grad``, a scheduler step); outside of compile it is ``fn``.

    >>> import tpx as tp
    >>> log = []
    >>> note = eager_island(lambda: log.append(1))
    >>> f = tp.compile(lambda x: (note(), x * 2)[1])
    >>> _ = [f(tp.ones(1)) for _ in range(3)]; len(log)
    3
    """

    @functools.wraps(fn)
    def island(*args: Any, **kwargs: Any) -> Any:
        rec = _record.active
        if rec is None or rec.in_island or rec.stopped is not None:
            return fn(*args, **kwargs)
        if rec.thread != threading.get_ident():
            return fn(*args, **kwargs)
        args = tuple(_materialized(a) for a in args)
        try:
            return rec.island(fn, args, kwargs)
        except _record.Stop as e:
            rec.stopped = (e.args[0], _record.user_line())
            return fn(*args, **kwargs)

    return island  # type: ignore[return-value]


def _materialized(a: Any) -> Any:
    """An iterator argument as a list (a replay calls the island again with the same)."""
    if isinstance(a, (types.GeneratorType, map, filter)) or (
        hasattr(a, "__next__") and hasattr(a, "__iter__")
    ):
        return list(a)
    return a
