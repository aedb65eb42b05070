"""Graph records: a :class:`GradFn` per recorded op, an :class:`AccumulateGrad` per leaf.

Nodes point only backwards (to the nodes of their inputs); a tensor points to its node; no
node points to its output tensor, so graphs are freed by reference counting alone.
"""

from __future__ import annotations

import itertools
import os
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import p10
from p10 import Handle

_seq = itertools.count()
_INTERNAL_DIRS = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (p10, sys.modules[__package__])
)
_internal_file: dict[str, bool] = {}

# NOTE: every tuple a node keeps is one more object that the cyclic GC counts and scans (a
# 20,000-node graph otherwise doubles its forward time in collections). The (shape, dtype)
# records and version tuples of a graph repeat a few values, so nodes share one tuple per value.
_shared: dict[tuple, tuple] = {}
_SHARED_MAX = 4096


hooked: weakref.WeakSet = weakref.WeakSet()
"""Nodes, and leaf tensors, whose gradient a hook or ``retain_grad`` sees before the node runs:
backward flags them once per pass instead of asking every node (see ``tpx._engine``)."""


def shared(record: tuple) -> tuple:
    """``record``, or the equal tuple that an earlier node recorded (nodes share metadata).

    >>> a, b = shared(((2, 3), "f4")), shared(((2, 3), "f4"))
    >>> a is b
    True
    """
    found = _shared.get(record)
    if found is None:
        if len(_shared) >= _SHARED_MAX:
            _shared.clear()  # bounded: shapes that change from call to call do not pile up
        _shared[record] = found = record
    return found


class InputMeta(tuple):
    """A node's ``(shape, dtype)`` per input, a tuple, with ``shapes`` and ``dtypes`` taken
    apart once: nodes share it (see :func:`shared_meta`), and rules read
    ``ctx.input_shapes`` once per node of every backward."""

    shapes: tuple
    dtypes: tuple

    def __new__(cls, pairs: list) -> InputMeta:
        meta = super().__new__(cls, pairs)
        meta.shapes = tuple([shape for shape, _ in pairs])
        meta.dtypes = tuple([dtype for _, dtype in pairs])
        return meta


def shared_meta(meta: tuple) -> InputMeta:
    """``meta``, a tuple of ``(shape, dtype)`` pairs, as an :class:`InputMeta` shared as a
    whole and pair by pair.

    >>> m = shared_meta((((2,), "f4"), ((2,), "f4")))
    >>> m is shared_meta((((2,), "f4"), ((2,), "f4"))) and m[0] is m[1]
    True
    >>> m.shapes
    ((2,), (2,))
    """
    found = _shared.get(meta)  # one lookup for a node whose inputs were seen before
    if found.__class__ is not InputMeta:  # new, or an equal plain tuple that shared() kept
        found = InputMeta([shared(pair) for pair in meta])
        if len(_shared) >= _SHARED_MAX:
            _shared.clear()
        _shared[found] = found
    return found


def needs_of(edges: tuple) -> tuple[bool, ...]:
    """For each input edge, whether it needs a gradient (a shared tuple, see :func:`shared`).

    >>> needs_of((None, object()))
    (False, True)
    """
    needs = tuple([e is not None for e in edges])
    if len(_needs) >= _SHARED_MAX:
        _needs.clear()
    return _needs.setdefault(needs, needs)


_needs: dict[tuple, tuple] = {}  # a few patterns (tpx.stack's long ones are rare)


def user_frame(skip: int = 0) -> tuple[Any, int]:
    """``(code, lineno)`` of the first frame outside p10 and tpx: the user's source line.

    The walk starts at the caller's caller, ``skip`` frames further out when the caller knows
    that those are TPX frames (each frame walked through costs a frame object).
    """
    f = sys._getframe(2 + skip)
    while f is not None:
        code = f.f_code
        # NOTE: f_lineno scans the code's line table from its start (a microsecond in a long
        # function), but the line of an instruction never changes: each user line is looked
        # up once. An entry holds its code object, so that the id is not reused meanwhile.
        key = (id(code), f.f_lasti)
        seen = _user_lines.get(key)
        if seen is not None:
            return seen
        name = code.co_filename
        internal = _internal_file.get(name)
        if internal is None:
            internal = _internal_file[name] = name.startswith(_INTERNAL_DIRS)
        if not internal:
            if len(_user_lines) >= _SHARED_MAX:
                _user_lines.clear()
            _user_lines[key] = seen = (code, f.f_lineno)
            return seen
        f = f.f_back
    return None, 0


# (id(code), f_lasti) of a user frame -> (code, line); see user_frame
_user_lines: dict[tuple[int, int], tuple[Any, int]] = {}


@dataclass(frozen=True)
class Rule:
    """A gradient rule: ``vjp(ctx, grad_output) -> one gradient (or None) per input``.

    ``save`` lists the input positions the rule reads from ``ctx.inputs``; ``save_output``
    says whether it reads ``ctx.output``. Nothing else is kept alive for backward.
    ``cross`` (two inputs, as ``mul``): input ``i`` is read only for the other input's
    gradient, so it is saved only when the other input requires grad (``x * 2`` keeps the
    scalar, not ``x``, and a later ``x += ...`` does not invalidate the node).
    ``save_from``: every input from this position on is read, however many there are
    (variadic ops: ``einsum`` reads all, ``getitem`` its index tensors after the base).
    ``real_vjp`` (derived): what a node whose values are all real runs; ``vjp`` itself, or the
    rule inside it when ``vjp`` adds the complex convention (see :mod:`tpx._complex_rules`).

    >>> from tpx.rules import RULES
    >>> r = RULES[p10.Op.MUL]
    >>> r.vjp is r.real_vjp, r.real_vjp.__name__
    (False, '_mul')
    """

    vjp: Callable[..., tuple[Any, ...]]
    save: tuple[int, ...] = ()
    save_output: bool = False
    cross: bool = False
    save_from: int | None = None
    real_vjp: Callable[..., tuple[Any, ...]] = field(init=False, repr=False, compare=False)
    saves_any: bool = field(init=False, repr=False, compare=False)  # derived: saves something

    def __post_init__(self) -> None:
        # NOTE: chosen once here and per node when recorded (GradFn.vjp), so that a real graph
        # runs the bare rules: no wrapper call and dtype test per node in backward
        object.__setattr__(self, "real_vjp", getattr(self.vjp, "real_vjp", self.vjp))
        # NOTE: one flag read per recorded node instead of three
        saves_any = bool(self.save or self.save_output or self.save_from is not None)
        object.__setattr__(self, "saves_any", saves_any)

    def saves(self, i: int) -> bool:
        """Whether the rule reads input ``i`` (for ``cross`` rules: may read it).

        >>> Rule(lambda ctx, g: (g,), save=(1,)).saves(0)
        False
        """
        return i in self.save or (self.save_from is not None and i >= self.save_from)


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class Node:
    """Common part of :class:`GradFn` and :class:`AccumulateGrad`.

    Nodes are plain classes: what most nodes never set (hooks, a retained tensor, ...) is a
    class-level default, so recording a node writes only the few fields it has.

    ``observed`` is the observers' slot (see :func:`tpx.add_observer`): TPX never reads or
    writes it; an observer may store there what it records of the node (typically in
    ``on_node_forward``) and read it back in later events. It goes when the node goes, so an
    observer needs no map of nodes to forget them. Unset it reads ``None`` (a class-level
    default: a node that no observer touches pays nothing). One slot for all observers: an
    observer that finds it set by another keeps its own record elsewhere, and marks what it
    stores so that it recognises its own.

    >>> import tpx as tp
    >>> class Mark:
    ...     def on_node_forward(self, node, inputs, output, seconds):
    ...         node.observed = ("mark", node.op.value)
    >>> with tp.add_observer(Mark()):
    ...     y = tp.ones(2, requires_grad=True) * 3
    >>> y.grad_fn.observed, (y * 2).grad_fn.observed
    (('mark', 'mul'), None)
    """

    _hooks: list | None = None
    _pre_hooks: list | None = None
    tensor_hooks: list | None = None
    retain: Any = None
    observed: Any = None
    seq: int

    def register_prehook(self, fn: Callable[[Any, Any], Any]) -> Handle:
        """``fn(node, grad_output)`` runs before the node; it may return a replacement grad."""
        return _add_hook(self, "_pre_hooks", fn)

    def register_hook(self, fn: Callable[[Any, tuple, Any], Any]) -> Handle:
        """``fn(node, grad_inputs, grad_output)`` runs after the node; may return new inputs."""
        return _add_hook(self, "_hooks", fn)


def _add_hook(node: Node, attr: str, fn: Callable[..., Any]) -> Handle:
    if not callable(fn):
        raise TypeError(f"register hook: {fn!r} is not callable")
    hooks = getattr(node, attr)
    if hooks is None:
        hooks = []
        setattr(node, attr, hooks)
    hooks.append(fn)
    if attr == "_pre_hooks":
        hooked.add(node)
    return Handle(lambda: hooks.remove(fn) if fn in hooks else None)


class GradFn(Node):
    """The record of one op: op, params, ordered input edges, saved values, metadata.

    ``in_meta``/``out_meta`` hold ``(shape, dtype)`` of each input and of the output;
    ``needs_input_grad`` which input edges lead to a node; ``vjp`` the function backward
    calls, chosen when recorded: ``rule.real_vjp`` when no input or output is complex;
    ``saved``/``versions`` the values the rule reads (inputs, then the output) and their
    version counters at record time; ``code``/``lineno`` the user's source line;
    ``overrides`` which overridden rule/kernel computed it (``{"rule": "module:function",
    "kernel": ...}``, see :func:`tpx.override_rule`), None for the built-in ones.

    >>> import tpx as tp
    >>> x = tp.ones((2, 3), requires_grad=True)
    >>> y = (x * 2).sum()
    >>> y.grad_fn.name, y.grad_fn.next_functions[0][0].name
    ('SumBackward', 'MulBackward')
    """

    out_meta: tuple = ()
    saved: tuple | None = None
    versions: tuple = ()
    checksums: tuple | None = None  # of the saved values, under tp.set_saved_tensor_checks
    freed = False
    ctx: Any = None
    scope = ""
    code: Any = None
    lineno = 0
    overrides: dict[str, str] | None = None

    def __init__(self, op: Any, params: dict, rule: Rule, edges: tuple, in_meta: tuple) -> None:
        self.seq = next(_seq)
        self.op = op
        self.params = params
        self.rule = rule
        self.vjp = rule.vjp
        self.edges = edges
        self.needs_input_grad = needs_of(edges)
        self.in_meta = in_meta

    @property
    def name(self) -> str:
        """PyTorch-style class name of the node, e.g. ``MulBackward``."""
        return _camel(self.op.value) + "Backward"

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        """The input edges in argument order, as PyTorch's ``(node, output_index)`` pairs."""
        return tuple((e, 0) for e in self.edges)

    @property
    def source(self) -> str:
        """The user's source line that recorded this node, as ``file:line in function``."""
        if self.code is None:
            return "<unknown>"
        return f"{self.code.co_filename}:{self.lineno} in {self.code.co_name}"

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """The P10 values saved for backward (empty once freed)."""
        return tuple(s for s in (self.saved or ()) if s is not None)

    @property
    def is_freed(self) -> bool:
        """True once backward released the saved values (``retain_graph=False``)."""
        return self.freed

    def __repr__(self) -> str:
        return f"<{self.name} #{self.seq} scope={self.scope!r}>"


class AccumulateGrad(Node):
    """The node of a leaf tensor that requires grad: backward sums gradients into its ``.grad``.

    >>> import tpx as tp
    >>> x = tp.ones(2, requires_grad=True)
    >>> (x * 2).grad_fn.next_functions[0][0].name
    'AccumulateGrad'
    """

    name = "AccumulateGrad"
    op = None
    edges = ()
    next_functions = ()
    scope = ""
    source = "<leaf>"

    def __init__(self, variable: Any) -> None:
        self.seq = next(_seq)
        self.variable = variable

    def __repr__(self) -> str:
        return f"<AccumulateGrad #{self.seq} shape={self.variable.shape}>"


def _reserve_observed(cls: type) -> None:
    """Put ``observed`` first in the attribute names that instances of ``cls`` share.

    CPython (3.11+) keeps an object's attributes in a table of names shared by its class; a
    name first set after that table is full (``observed``, once backward has set ``freed``)
    gives each instance a dict of its own (~700 bytes per node, one more object for the cyclic
    GC). Set here once on a throwaway instance, it costs no node anything.

    >>> n = GradFn.__new__(GradFn); n.observed = ("mine",); n.observed
    ('mine',)
    """
    cls.__new__(cls).observed = None  # type: ignore[attr-defined]


_reserve_observed(GradFn)
_reserve_observed(AccumulateGrad)


class RuleContext:
    """What a rule sees, and all it sees: the op's ``params``, the saved ``inputs`` (None where
    not saved) and ``output``, each input's ``(shape, dtype)`` at record time (``input_meta``),
    which inputs need a gradient (``needs_input_grad``) and, for a :class:`tpx.Function`, the
    ``ctx`` its ``forward`` filled (``function_ctx``).

    The engine builds one from a node; an inspector builds one from a trace to call a rule
    again (nothing else of the graph is needed):

    >>> import p10
    >>> from tpx.rules import RULES
    >>> x, y = p10.asarray([2.0]), p10.asarray([5.0])
    >>> meta = (((1,), x.dtype), ((1,), y.dtype))
    >>> ctx = RuleContext({}, meta, (True, False), inputs=(x, y))
    >>> gx, gy = RULES[p10.Op.MUL].vjp(ctx, p10.ones(1))
    >>> gx.tolist(), gy
    ([5.0], None)
    """

    __slots__ = ("function_ctx", "input_meta", "inputs", "needs_input_grad", "output", "params")

    def __init__(
        self,
        params: dict,
        input_meta: tuple,
        needs_input_grad: tuple[bool, ...],
        inputs: tuple = (),
        output: Any = None,
        function_ctx: Any = None,
    ) -> None:
        self.params = params
        self.input_meta = input_meta
        self.needs_input_grad = needs_input_grad
        self.inputs = inputs
        self.output = output
        self.function_ctx = function_ctx

    @property
    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        """Shape of each input at record time."""
        meta = self.input_meta
        if meta.__class__ is InputMeta:  # a recorded node's (see shared_meta)
            return meta.shapes
        return tuple([m[0] for m in meta])

    @property
    def input_dtypes(self) -> tuple[Any, ...]:
        """Dtype of each input at record time."""
        meta = self.input_meta
        if meta.__class__ is InputMeta:
            return meta.dtypes
        return tuple([m[1] for m in meta])
