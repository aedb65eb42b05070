"""Deferred graph builds: what a capture fixes at the end of a kept backward so that the graph
record can be built later, when it is first read (see ``Capture(build="lazy")``).

A kept step's outputs and constants are frozen at forward time already (``_pending``); the
build reads three more things a program can change after its backward: a leaf's value (an
optimizer's in-place step), its label (``Tensor.name``) and the gradients a user can reach and
write in place (the ``gradient=`` given to ``backward``, a leaf's ``.grad``, a retained
``.grad``). :func:`detach_nodes` fixes them, and takes out of the nodes what the build reads of
them (static fields and records, which do not change once the backward has ended), so that a
waiting step holds no TPX node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any

import numpy as np

from tpx import AccumulateGrad, observe
from tpx_inspect._lazy import lazy_record
from tpx_inspect._pending import OWNER
from tpx_inspect._util import paused_gc
from tpx_inspect.errors import InspectError

native = observe.native
ndarray = np.ndarray

BUILD_MODES = ("lazy", "eager")
"""``Capture(build=...)``: ``lazy`` builds a kept step's graph record when it is first read,
``eager`` at the end of its backward."""

MAX_DEFERRED_NODES = 250_000
"""At most this many nodes wait in a capture's deferred builds: past it, the oldest are built
(each waiting node keeps its TPX node, record and gradients alive: a few KB)."""

MAX_DEFERRED_BYTES = 256 * 2**20
"""At most this many bytes of leaf copies wait in a capture's deferred builds (as above)."""


class DeferredBuildError(InspectError, RuntimeError):
    """A graph record whose build was deferred to its first read failed to build; the message
    names its step and graph id. The other graphs are kept.

    >>> issubclass(DeferredBuildError, RuntimeError)
    True
    """


class LeafSnapshot:
    """A leaf as its backward left it: its label, whether it is a ``Parameter``, a private
    copy of its value (same memory layout), its shape and dtype.

    >>> import tpx as tp
    >>> w = tp.ones(2, requires_grad=True); w.name = "w"
    >>> s = LeafSnapshot.of(w, {}); w.name = "v"
    >>> s.label, s.value.tolist(), s.shape
    ('w', [1.0, 1.0], (2,))
    """

    __slots__ = ("dtype", "label", "param", "shape", "value")

    def __init__(self, label: str, param: bool, value: np.ndarray, shape: Any, dtype: Any) -> None:
        self.label, self.param, self.value = label, param, value
        self.shape, self.dtype = shape, dtype

    @classmethod
    def of(cls, var: Any, labels: dict) -> LeafSnapshot | None:
        """The snapshot of leaf tensor ``var``; None for a value not on the NumPy backend."""
        a = native(var)
        if a.__class__ is not ndarray:
            return None
        param = type(var).__name__ == "Parameter"
        return cls(leaf_label(var, labels), param, a.copy(order="K"), var.shape, var.dtype)


class Deferred:
    """One kept step waiting for its build: what the build reads of its nodes, taken out of
    them at the backward's end (see :func:`detach_nodes`), its backward's records (nodes
    named by position), its leaves' snapshots (by position), and what it holds (nodes, bytes
    of leaf copies)."""

    __slots__ = ("backward", "leaves", "nbytes", "nodes", "rows", "step")

    def __init__(self, b: Any, rows: list, leaves: dict) -> None:
        self.step, self.backward, self.rows, self.leaves = b.step, b, rows, leaves
        self.nodes = len(rows)
        self.nbytes = sum(s.value.nbytes for s in leaves.values())


def labels_of(params: Any) -> dict[int, tuple[str, Any]]:
    """``{id(tensor): (name, tensor)}`` of ``Capture(params=...)`` (a mapping or pairs)."""
    if params is None:
        return {}
    items = params.items() if isinstance(params, Mapping) else params
    return {id(t): (str(name), t) for name, t in items}


def leaf_label(var: Any, labels: dict) -> str:
    """The label of a leaf: its name in ``params=`` (explicit wins), else its ``Tensor.name``
    (``nn.Module`` names its parameters ``model.0.weight`` when called), else ''."""
    found = labels.get(id(var))
    if found is not None:
        return found[0]
    return getattr(var, "name", None) or ""


def detach_user_memory(b: Any, user: Iterable[Any]) -> None:
    """Replace every gradient ``b`` holds whose memory is one of ``user``'s (the root
    gradients given to backward and the tensors in ``user``; a view of one too) by a private
    copy, one copy per held object (the build tells values apart by identity)."""
    bases = {id(_base(a)) for a in b.root_grads.values() if a.__class__ is ndarray}
    for t in user:
        a = None if t is None else native(t)
        if a.__class__ is ndarray:
            bases.add(id(_base(a)))
    if not bases:
        return
    copies: dict[int, Any] = {}

    def fix(x: Any) -> Any:
        c = copies.get(id(x))
        if c is None:
            c = copies[id(x)] = x.copy(order="K") if id(_base(x)) in bases else x
        return c

    # NOTE: most held gradients are fresh arrays of the engine (no base, not the user's):
    # kept as they are without a call
    def fixed(xs: list) -> list:
        return [
            x if x.__class__ is not ndarray or (x.base is None and id(x) not in bases) else fix(x)
            for x in xs
        ]

    b.root_grads = {node: fixed([g])[0] for node, g in b.root_grads.items()}
    b.executed[1::6] = fixed(b.executed[1::6])
    b.gins[:] = fixed(b.gins)
    b.accs[1::4] = fixed(b.accs[1::4])
    b.accs[2::4] = fixed(b.accs[2::4])


def _base(a: np.ndarray) -> Any:
    """The object that owns ``a``'s memory (``a`` itself when it owns it)."""
    while isinstance(a, ndarray) and a.base is not None:
        a = a.base
    return a


def deferral(b: Any, pending: Any, labels: dict) -> Deferred | None:
    """The deferred build of the backward ``b`` (see :func:`detach_nodes`); None for a step
    to build at once (not kept, a ``tpx.grad`` pass, a lazy backend's, ``create_graph``'s or
    another backend's values).

    >>> import tpx as tp, tpx_inspect
    >>> for mode in BUILD_MODES:
    ...     with tpx_inspect.capture(build=mode) as cap:
    ...         (tp.ones(2, requires_grad=True) * 2).sum().backward()
    ...         print(mode, "waiting:", len(cap._queue.entries), "built:", len(cap._graphs))
    lazy waiting: 1 built: 0
    eager waiting: 0 built: 1
    """
    if not b.wanted or b.is_grad or lazy_record(list(b.roots), pending, b):
        return None
    if any(g.__class__ is not ndarray for g in b.root_grads.values()):
        return None
    with paused_gc(promote=True):  # NOTE: the rows are kept: no young scan of them
        return detach_nodes(b, pending, labels)


# NOTE: what the build reads of an op's node (see _build), read in C in one call
_FIELDS = attrgetter(
    "seq", "op", "params", "in_meta", "out_meta", "code", "lineno", "scope", "overrides"
)


def detach_nodes(b: Any, pending: Any, labels: dict) -> Deferred | None:
    """Take out of ``b``'s nodes what the build reads, one row per node (its pending record,
    its edges as positions in ``b.order``; a leaf's :class:`LeafSnapshot`), copy the
    gradients the program can write into (see :func:`detach_user_memory`), and name the
    nodes in ``b`` by position: the deferred step then holds no TPX node. (Holding them
    would change the program's next graphs: a leaf's node lives as long as a graph that uses
    it, and TPX reuses a live one, with its older ``seq``, instead of making a new one.)
    None when a leaf's value is not a NumPy array."""
    order = b.order
    pos = dict(zip(order, range(len(order))))
    get = pos.get
    token = pending.token
    rows: list[tuple] = []
    add = rows.append
    leaves: dict[int, LeafSnapshot] = {}
    grads: list[Any] = []  # NOTE: the user's gradient tensors (leaves' and retained .grad)
    for n in order:
        p = n.observed
        # NOTE: NodeMap.get written out for a record in the slot
        if p.__class__ is not tuple or len(p) <= OWNER or p[OWNER] is not token:
            p = pending.get(n)
        if n.__class__ is AccumulateGrad:
            var = n.variable
            snap = LeafSnapshot.of(var, labels)
            if snap is None:
                return None
            leaves[len(rows)] = snap
            grads.append(var.grad)
            add((None, n.seq, None, p))
            continue
        if n.retain is not None:
            t = n.retain()
            grads.append(None if t is None else t.grad)
        add((n.__class__, _FIELDS(n), tuple(map(get, n.edges)), p))
    detach_user_memory(b, grads)
    ex, accs = b.executed, b.accs
    ex[0::6] = list(map(get, ex[0::6]))
    accs[0::4], accs[3::4] = list(map(get, accs[0::4])), list(map(get, accs[3::4]))
    b.root_grads = {get(n): g for n, g in b.root_grads.items()}
    b.roots, b.order = tuple(map(get, b.roots)), None
    return Deferred(b, rows, leaves)


def attach_nodes(entry: Deferred) -> tuple[list, list, dict]:
    """Stand-ins of the nodes of ``entry`` (TPX node objects that TPX never sees, holding what
    :func:`detach_nodes` took), put back into its backward's records; returns its roots, its
    nodes and its leaves' snapshots by node, as the build takes them."""
    nodes: list[Any] = []
    for cls, fields, _, p in entry.rows:
        if cls is None:
            s = AccumulateGrad.__new__(AccumulateGrad)
            s.seq, s.variable = fields, None
        else:
            s = cls.__new__(cls)
            (s.seq, s.op, s.params, s.in_meta, s.out_meta, s.code, s.lineno, s.scope,
             s.overrides) = fields  # fmt: skip
        if p is not None:
            s.observed = p
        nodes.append(s)
    for s, (cls, _, edges, _) in zip(nodes, entry.rows):
        if cls is not None:
            s.edges = tuple([None if i is None else nodes[i] for i in edges])

    def node(i: int | None) -> Any:
        return None if i is None else nodes[i]

    b = entry.backward
    ex, accs = b.executed, b.accs
    ex[0::6] = list(map(node, ex[0::6]))
    accs[0::4], accs[3::4] = list(map(node, accs[0::4])), list(map(node, accs[3::4]))
    b.root_grads = {node(i): g for i, g in b.root_grads.items()}
    b.roots, b.order = tuple(map(node, b.roots)), nodes
    return list(b.roots), nodes, {nodes[i]: s for i, s in entry.leaves.items()}


class BuildQueue:
    """The deferred builds of one capture, in order; ``build(entry)`` builds and stores one
    (``next_id()``: the id its graph gets). The caller holds the capture's lock."""

    def __init__(self, build: Callable[[Deferred], Any], next_id: Callable[[], int]) -> None:
        self._build = build
        self._next_id = next_id
        self.entries: deque[Deferred] = deque()
        self.nodes = 0  # NOTE: what the waiting entries hold (see MAX_DEFERRED_NODES)
        self.nbytes = 0
        self.failed: list[DeferredBuildError] = []

    def defer(self, entry: Deferred) -> None:
        """Queue ``entry``; build the oldest waiting ones while they hold too much."""
        self.entries.append(entry)
        self.nodes += entry.nodes
        self.nbytes += entry.nbytes
        while self.entries and (
            self.nodes > MAX_DEFERRED_NODES or self.nbytes > MAX_DEFERRED_BYTES
        ):
            self.build_next()

    def build_all(self) -> None:
        """Build every waiting entry, in order."""
        while self.entries:
            self.build_next()

    def build_next(self) -> None:
        """Build the oldest waiting entry; a failure is kept (see :meth:`take_failed`)."""
        entry = self.entries.popleft()  # NOTE: taken first: each entry is built once
        self.nodes -= entry.nodes
        self.nbytes -= entry.nbytes
        gid = self._next_id()
        try:
            self._build(entry)
        except Exception as exc:
            error = DeferredBuildError(
                f"capture: building the graph of step {entry.step} (graph {gid}), deferred to "
                f"its first read, failed: {type(exc).__name__}: {exc}; the other graphs are "
                'kept (Capture(build="eager") raises such an error at the backward itself)'
            )
            error.__cause__ = exc
            self.failed.append(error)

    def take_failed(self) -> list[DeferredBuildError]:
        """The failures not taken yet, oldest first."""
        failed, self.failed = self.failed, []
        return failed
