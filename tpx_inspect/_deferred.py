"""Deferred graph builds: what a capture fixes at the end of a kept backward so that the graph
record can be built later, when it is first read (see ``Capture(build="lazy")``).

A kept step's outputs and constants are frozen at forward time already (``_pending``); the
build reads three more things a program can change after its backward: a leaf's value (an
optimizer's in-place step), its label (``Tensor.name``) and the gradients a user can reach and
write in place (the ``gradient=`` given to ``backward``; a ``.grad`` never is one, see
``_user_memory``). :func:`detach_nodes` fixes them (the gradients: see :func:`watch_user_memory`),
and takes out of the nodes what the build reads of them (static fields and records, which do
not change once the backward has ended), so that a waiting step holds no TPX node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from itertools import chain, islice, repeat
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from tpx import AccumulateGrad, GradFn, observe
from tpx_inspect._lazy import lazy_record
from tpx_inspect._pending import CONSTS, LAZY, N_CONSTS, OUT, OWNER
from tpx_inspect._user_memory import repair_user_memory, watch_user_memory
from tpx_inspect._util import paused_gc
from tpx_inspect.errors import InspectError
from tpx_inspect.summary import stats_row

native = observe.native
ndarray = np.ndarray

BUILD_MODES = ("lazy", "eager")
"""``Capture(build=...)``: ``lazy`` builds a kept step's graph record when it is first read,
``eager`` at the end of its backward."""

MAX_DEFERRED_NODES = 250_000
"""At most this many nodes wait in a capture's deferred builds: past it, the oldest are built
(each waiting node keeps its record, fields and gradients: about 1.2 KB on a (4, 4) chain)."""

MAX_DEFERRED_BYTES = 256 * 2**20
"""At most this many bytes of arrays wait in a capture's deferred builds (leaf copies,
gradients, the records' frozen values but small outputs): past it, the oldest are built."""


class DeferredBuildError(InspectError, RuntimeError):
    """A graph record whose build was deferred to its first read failed to build; the message
    names its step and graph id. The other graphs are kept.

    >>> issubclass(DeferredBuildError, RuntimeError)
    True
    """


class LeafSnapshot:
    """A leaf as its backward left it: its label, whether it is a ``Parameter``, a private
    copy of its value (same memory layout), its shape and dtype; for a value that is never
    kept (more elements than the capture's limit) and larger than ``LAZY`` elements, its
    summary row and head (``stats_row``, as the build makes them) instead of the copy. A
    smaller one is copied (a copy costs a tenth of the statistics; the build summarizes it, out
    of the training loop), as ``_pending._Frozen`` does for a node's output.

    >>> import tpx as tp
    >>> w = tp.ones(2, requires_grad=True); w.name = "w"
    >>> s = LeafSnapshot.of(w, {}); w.name = "v"
    >>> s.label, s.value.tolist(), s.shape
    ('w', [1.0, 1.0], (2,))
    """

    __slots__ = ("dtype", "label", "param", "shape", "summary", "value")

    def __init__(
        self, label: str, param: bool, value: Any, shape: Any, dtype: Any, summary: Any = None
    ) -> None:
        self.label, self.param, self.value = label, param, value
        self.shape, self.dtype, self.summary = shape, dtype, summary

    @classmethod
    def of(cls, var: Any, labels: dict, limit: int = -1) -> LeafSnapshot | None:
        """The snapshot of leaf tensor ``var`` (values of up to ``limit`` elements kept, -1:
        all); None for a value not on the NumPy backend."""
        a = native(var)
        if a.__class__ is not ndarray:
            return None
        label, param = leaf_label(var, labels), type(var).__name__ == "Parameter"
        if 0 <= limit < a.size and a.size > LAZY:
            return cls(label, param, None, var.shape, var.dtype, stats_row(a))
        return cls(label, param, a.copy(order="K"), var.shape, var.dtype)


class Deferred:
    """One kept step waiting for its build: what the build reads of its nodes, taken out of
    them at the backward's end (``rows``, see :func:`detach_nodes`), its backward's records
    (nodes named by ``seq``), its leaves' snapshots (by position in its order), the program's
    memory watched (see :func:`watch_user_memory`), and what it holds (nodes, bytes)."""

    __slots__ = ("backward", "leaves", "nbytes", "nodes", "rows", "step", "watched")

    def __init__(
        self, b: Any, rows: Detached, leaves: dict, held: int = 0, watched: list | None = None
    ) -> None:
        self.step, self.backward, self.rows, self.leaves = b.step, b, rows, leaves
        self.watched = watched or []  # NOTE: see watch_user_memory
        self.nodes = rows.n
        # NOTE: the leaf copies, the gradients, the watched memory's copies and ``held`` (the
        # records' larger values)
        grads = sum(map(getattr, b.executed[1::6], repeat("nbytes"), repeat(0)))
        copies = sum(c.nbytes for _, c in self.watched)
        values = sum(s.value.nbytes for s in leaves.values() if s.value is not None)
        self.nbytes = values + grads + copies + held


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


def deferral(b: Any, pending: Any, labels: dict, limit: int = -1) -> Deferred | None:
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
        return detach_nodes(b, pending, labels, limit)


# NOTE: what the build reads of an op's node (see _build)
_FIELDS_NAMES = (
    "seq",
    "op",
    "params",
    "in_meta",
    "out_meta",
    "code",
    "lineno",
    "scope",
    "overrides",
)


def detach_nodes(b: Any, pending: Any, labels: dict, limit: int = -1) -> Deferred | None:
    """Take out of ``b``'s nodes what the build reads, column by column, mostly in C (see
    :class:`Detached`), copy the memory the program can write into (see
    :func:`watch_user_memory`), and name the nodes in ``b`` by ``seq``: the deferred step
    then holds no TPX node. (Holding them would change the program's next graphs: a leaf's
    node lives as long as a graph that uses it, and TPX reuses a live one, with its older
    ``seq``, instead of making a new one.) None when a leaf's value is not a NumPy array."""
    order = b.order
    classes = list(map(type, order))
    d = Detached(len(order))
    ops = order
    if AccumulateGrad in classes:
        d.leaf_at = [i for i, c in enumerate(classes) if c is AccumulateGrad]
        ops = [n for n, c in zip(order, classes) if c is not AccumulateGrad]
        classes = [c for c in classes if c is not AccumulateGrad]
    # NOTE: a comprehension, not map(attrgetter(...)): the interpreter's specialized attribute
    # loads make it ~1.7x faster; the fields in _FIELDS_NAMES order
    d.classes = classes
    d.fields = [
        (n.seq, n.op, n.params, n.in_meta, n.out_meta, n.code, n.lineno, n.scope, n.overrides)
        for n in ops
    ]
    edges = list(map(_edges, ops))
    d.lens, d.edges = list(map(len, edges)), _seqs(chain.from_iterable(edges))
    d.records = _records(ops, pending)
    leaves: dict[int, LeafSnapshot] = {}
    for i in d.leaf_at:
        var = order[i].variable
        snap = leaves[i] = LeafSnapshot.of(var, labels, limit)  # type: ignore[assignment]
        if snap is None:
            return None
        d.leaf_rows.append((order[i].seq, pending.get(order[i])))
    # NOTE: only the root gradients given to backward are watched: a leaf's or a retained
    # `.grad` never shares memory with a gradient the capture holds (TPX copies a gradient
    # into `.grad` unless the engine alone holds it, tpx._leaf._unshared; the capture holds
    # every one: test_values_written_in_place_after_backward writes both in place)
    watched = watch_user_memory(b)
    ex, accs = b.executed, b.accs
    ex[0::6] = _seqs(ex[0::6])
    accs[0::4], accs[3::4] = _seqs(accs[0::4]), _seqs(accs[3::4])
    b.root_grads = {n.seq: g for n, g in b.root_grads.items()}
    b.roots, b.order = tuple(_seqs(b.roots)), None
    return Deferred(b, d, leaves, _held_bytes(d.records), watched)


def _seqs(nodes: Iterable[Any]) -> list[int | None]:
    """Each node's ``seq`` (None for None): what names a node while it is detached."""
    return [None if n is None else n.seq for n in nodes]  # NOTE: 2x map(getattr, ...)


class Detached:
    """What the build reads of the nodes of one step (``n`` of them, by position in its
    order): the leaves' positions and ``(seq, record)``; per other node, in order, its class,
    its fields (``_FIELDS_NAMES``), its edge count (``lens``) and pending record; all edges by
    the ``seq`` of the node they lead to."""

    __slots__ = ("classes", "edges", "fields", "leaf_at", "leaf_rows", "lens", "n", "records")

    def __init__(self, n: int) -> None:
        self.n = n
        self.leaf_at: list[int] = []
        self.leaf_rows: list[tuple] = []
        self.classes: list[type] = []
        self.fields: list[tuple] = []
        self.lens: list[int] = []
        self.edges: list[int | None] = []
        self.records: list[Any] = []


def _records(ops: list, pending: Any) -> list:
    """The pending record of each node (``pending.get``), read from the nodes' slots in C
    when they all hold this capture's records."""
    recs = list(map(_observed, ops))
    try:
        owners = list(map(_owner, recs))
    except (TypeError, IndexError):  # NOTE: a node without a record, or another's
        owners = []
    if owners.count(pending.token) != len(recs):
        recs = list(map(pending.get, ops))
    return recs


def _held_bytes(records: list) -> int:
    """The bytes of the larger values the records hold (see :func:`record_bytes`)."""
    outs = list(map(_out, records)) if None not in records else [p and p[OUT] for p in records]
    kinds = list(map(type, outs))
    if kinds.count(bytes) == len(kinds):
        return 0
    return sum(record_bytes(p) for p, k in zip(records, kinds) if p is not None and k is not bytes)


_observed, _edges = attrgetter("observed"), attrgetter("edges")
_owner, _out = itemgetter(OWNER), itemgetter(OUT)


def record_bytes(p: tuple) -> int:
    """The bytes of the arrays a pending record holds (its output and constants). Asked only
    of a record whose output is not kept as bytes: a small output's record (most nodes) is
    bounded by the node cap, and its constants are not counted."""
    total = 0
    for x in (p[OUT], *p[CONSTS : CONSTS + p[N_CONSTS]]):
        if x is None or x.__class__ in _NUMBERS or x.__class__ is bytes:
            continue
        if x.__class__ is ndarray:
            total += x.nbytes
            continue
        # NOTE: a _Frozen's copies, each once (its kept value may be its lazy summary's copy)
        arrays = {
            id(a): a for a in (getattr(x, n, None) for n in getattr(type(x), "__slots__", ()))
        }
        total += sum(a.nbytes for a in arrays.values() if a.__class__ is ndarray)
    return total


_NUMBERS = (float, int, bool, complex)


class StandIn:
    """A detached ``GradFn`` as the build reads it (see :func:`attach_nodes`): the fields
    :func:`detach_nodes` took, its pending record (``observed``) and its ``edges`` (other
    stand-ins). TPX never sees one."""

    __slots__ = (*_FIELDS_NAMES, "observed", "edges", "__weakref__")

    @property
    def name(self) -> str:
        """The node's name (``MulBackward``), as ``GradFn.name`` makes it."""
        return GradFn.name.fget(self)  # type: ignore[attr-defined]


def attach_nodes(entry: Deferred) -> tuple[list, list, dict]:
    """Stand-ins of the nodes of ``entry`` (a :class:`StandIn` per ``GradFn``; a node object
    of its class, which TPX never sees, for a leaf or another class), holding what
    :func:`detach_nodes` took, put back into its backward's records; returns its roots, its
    nodes and its leaves' snapshots by node, as the build takes them."""
    d = entry.rows
    nodes: list[Any] = [None] * d.n
    for i, (seq, p) in zip(d.leaf_at, d.leaf_rows):
        s = nodes[i] = AccumulateGrad.__new__(AccumulateGrad)
        s.seq, s.variable = seq, None
        if p is not None:
            s.observed = p
    leaf = set(d.leaf_at)
    at = [i for i in range(d.n) if i not in leaf] if leaf else range(d.n)
    new = object.__new__
    for i, cls, fields, p in zip(at, d.classes, d.fields, d.records):
        s = nodes[i] = new(StandIn) if cls is GradFn else cls.__new__(cls)
        (s.seq, s.op, s.params, s.in_meta, s.out_meta, s.code, s.lineno, s.scope,
         s.overrides) = fields  # fmt: skip
        s.observed = p
    by_seq = {s.seq: s for s in nodes}
    node = by_seq.get  # NOTE: None for None (and for a node not in the graph, as eager's)
    edges = iter(d.edges)
    for i, k in zip(at, d.lens):
        nodes[i].edges = tuple(map(node, islice(edges, k)))

    b = entry.backward
    repair_user_memory(b, entry.watched)
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
