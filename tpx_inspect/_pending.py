"""What a capture keeps of one node between its forward and the end of its backward.

At forward time only what may change later is fixed: a copy of a small float output (its
summary is made with the other values of its graph, see ``_batch_stats``), or the summary of a
larger one. Everything else is read when the graph is built (``_build``).
"""

from __future__ import annotations

import gc
import math
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

import p10
from tpx import Node, observe
from tpx_inspect._batch_stats import BATCHED
from tpx_inspect._lazy import is_lazy, snapshot
from tpx_inspect.summary import dtype_name, stats_row, to_numpy

_NUMBERS = (float, int, bool, complex)
p10_tensor, native = observe.p10_tensor, observe.native
P10Tensor = p10.Tensor


def saved_meta(saved: tuple | None) -> tuple:
    """``(slot, shape, dtype, bytes, key)`` of each value in a node's ``saved`` tuple; ``key``
    identifies the memory so values saved twice are counted once."""
    if not saved:
        return ()
    last = len(saved) - 1
    out = []
    names = _DTYPES
    for i, v in enumerate(saved):
        if v is None:
            continue
        # NOTE: a kept step's values are arrays already (see frozen_record); one call for a
        # tpx or P10 tensor (p10_tensor only if not NumPy)
        a = v if v.__class__ is np.ndarray else native(v)
        if a.__class__ is np.ndarray:
            dt = a.dtype
            hit = names.get(id(dt))
            name = hit[1] if hit is not None else _dtype_name(dt)
            out.append((-1 if i == last else i, a.shape, name, a.nbytes, id(a)))
            continue
        raw = p10_tensor(v)
        if not isinstance(raw, p10.Tensor):
            a = None
        if is_lazy(raw):  # its shape and dtype, without computing it
            size = math.prod(raw.shape) * raw.dtype.itemsize
            out.append((-1 if i == last else i, raw.shape, _dtype_name(raw.dtype), size, id(a)))
            continue
        a = to_numpy(v)
        out.append((-1 if i == last else i, a.shape, _dtype_name(a.dtype), a.nbytes, id(a)))
    return tuple(out)


# NOTE: a pending record is a plain tuple, not a class instance, and one object per node (its
# constants and saved values are its last items, not tuples of their own); of a kept step, it
# holds only atoms and NumPy arrays, so the cyclic GC stops tracking it at its first collection
SECONDS, OUT, RAW, SAVED, STEP, OWNER, N_CONSTS, CONSTS = range(8)
"""``(seconds, out, raw, saved, step, owner, k, *consts, *saved values)``: the forward's seconds;
``out`` the output as frozen (see :func:`frozen_record`), None when not frozen; ``raw`` the live P10
output when not frozen, else None; ``saved`` the :func:`saved_meta` of what the node saved, None
until read (see :func:`completed`), and until then the saved values themselves follow the
constants; ``step`` the capture's step at forward time; ``owner`` the :class:`NodeMap`'s token
(a record in a node's ``observed`` slot is the map's own only if it holds its token); from
``CONSTS`` on, ``k`` items: per
input edge, the input when it is no node's output (a constant), else None (see
:func:`consts_of`)."""


def pending_record(
    seconds: float, raw: Any, consts: list, saved: Any, step: int, owner: Any = None
) -> tuple:
    """The pending record of one node of a step not kept (see ``SECONDS``): ``raw`` its live
    P10 output, ``consts`` per input edge, ``saved`` the node's saved tuple (or None).

    >>> import tpx as tp
    >>> y = tp.ones(2, requires_grad=True) * 2; node = observe.grad_node(y)
    >>> p = pending_record(0.0, observe.p10_tensor(y), [None, 2], node.saved, 0)
    >>> [s[:4] for s in completed(p)[SAVED]], value_of(p) is observe.p10_tensor(y), consts_of(p)
    ([(1, (), 'float32', 4)], True, (None, 2))
    """
    return (seconds, None, raw, None, step, owner, len(consts), *consts, *(saved or ()))


def pending_of(seconds: float, raw: Any, node: Any, inputs: tuple, step: int, owner: Any) -> tuple:
    """:func:`pending_record` of ``node``, recorded on ``inputs`` (the constants read from
    them by :func:`input_consts`); one and two inputs written out, with no list per node (the
    capture's forward handler makes one per recorded op of a step not kept).

    >>> import tpx as tp
    >>> y = tp.ones(2, requires_grad=True) * 2; node = observe.grad_node(y)
    >>> p = pending_of(0.0, y.p10, node, (y, 2), 0, None)
    >>> p == pending_record(0.0, y.p10, input_consts(node, (y, 2)), node.saved, 0)
    True
    """
    edges, saved = node.edges, node.saved or ()
    n = len(inputs)
    if n == 2 and len(edges) == 2:
        x, y = inputs
        e0, e1 = edges
        c0 = None if e0 is not None else x if x.__class__ in _NUMBERS else p10_tensor(x)
        c1 = None if e1 is not None else y if y.__class__ in _NUMBERS else p10_tensor(y)
        return (seconds, None, raw, None, step, owner, 2, c0, c1) + saved  # NOTE: no list
    if n == 1 and len(edges) == 1:
        x = inputs[0]
        c0 = None if edges[0] is not None else x if x.__class__ in _NUMBERS else p10_tensor(x)
        return (seconds, None, raw, None, step, owner, 1, c0) + saved
    return pending_record(seconds, raw, input_consts(node, inputs), saved, step, owner)


def input_consts(node: Any, inputs: tuple) -> list:
    """Per input edge of ``node``: the input when it is no node's output (a constant: a
    Python number as it is, else its P10 value), else None."""
    return [
        None if e is not None else (x if x.__class__ in _NUMBERS else p10_tensor(x))
        for x, e in zip(inputs, node.edges)
    ]


def frozen_record(
    seconds: float, raw: Any, consts: list, saved: Any, step: int, keep: Callable[[Any], bool],
    stats: bool = True, meta: Any = None, owner: Any = None,
) -> tuple:  # fmt: skip
    """The pending record of one node of a kept step: its output and constants summarized
    (and small values copied) now, before anything can write into them; without ``stats``,
    every value copied (see :func:`freeze_value`). ``meta``: the node's ``out_meta``
    (``(shape, dtype)``); a small float output whose dtype it names is kept as its bytes (see
    :func:`snapshot_dtype`). A lazy output stays a P10 tensor (a snapshot), summarized with
    the whole backward in one compute (see ``_lazy``).

    >>> y = p10.ones(2); p = frozen_record(0.0, y, [None, 2.0], (None, None), 0, bool, True,
    ...     ((2,), y.dtype)); y += 1
    >>> snapshot_array(p[OUT], ((2,), y.dtype)).tolist(), p[RAW], consts_of(p)
    ([1.0, 1.0], None, (None, 2.0))
    """
    a = native(raw)
    if a.__class__ is not np.ndarray:
        if is_lazy(raw):
            consts = [snapshot(c) for c in consts]
            k = len(consts)
            return (seconds, None, snapshot(raw), None, step, owner, k, *consts, *(saved or ()))
        out: Any = freeze_array(to_numpy(raw), keep, stats)
    else:
        dtype = None
        if stats and meta:  # NOTE: snapshot_dtype's cache read here (a call less per node)
            hit = _SNAPSHOTS.get(id(meta))
            dtype = hit[1] if hit is not None and hit[0] is meta else snapshot_dtype(meta)
        if dtype is a.dtype:
            out = a.tobytes()  # NOTE: bytes: a quarter of an ndarray copy's cost, and untracked
        else:
            out = freeze_array(a, keep, stats)
    for c in consts:  # NOTE: a Python number is immutable: summarized at build
        if c is not None and c.__class__ not in _NUMBERS:
            consts = _freeze_consts(consts, keep, stats)
            break
    if not saved:
        return (seconds, out, None, None, step, owner, len(consts), *consts)
    # NOTE: a saved P10 value as its array (all that saved_meta reads of it; not tracked by the
    # cyclic GC); one backend per op: the output's (NumPy) is its inputs'
    held = [native(v) if v.__class__ is P10Tensor else v for v in saved]
    return (seconds, out, None, None, step, owner, len(consts), *consts, *held)


def completed(p: tuple) -> tuple:
    """``p`` with its ``saved`` metadata (read from the saved values that follow the constants
    if not yet; the record then holds them no longer).

    >>> completed((0.0, None, None, None, 0, None, 1, None))[SAVED]
    ()
    """
    if p[SAVED] is not None:
        return p
    end = CONSTS + p[N_CONSTS]
    return (*p[:SAVED], saved_meta(p[end:]), *p[STEP:end])


def consts_of(p: tuple) -> tuple:
    """The constants of record ``p``, one per input edge (None for an edge)."""
    return p[CONSTS : CONSTS + p[N_CONSTS]]


def value_of(p: tuple) -> Any:
    """The output of record ``p`` as frozen (see :func:`frozen_record`), else its P10 tensor."""
    out = p[OUT]
    return p[RAW] if out is None else out


def _freeze_consts(consts: list, keep: Callable[[Any], bool], stats: bool) -> list:
    out = []
    for c in consts:  # NOTE: freeze_value and freeze_array written out (two calls per constant)
        if c is None or c.__class__ in _NUMBERS:
            out.append(c)
            continue
        a = native(c)
        if a.__class__ is not np.ndarray:
            a = to_numpy(c)
        if not stats or (a.dtype.kind == "f" and a.size <= BATCHED):
            out.append(a.copy("K"))  # NOTE: np.array(a, copy=True) without its keyword parsing
        else:
            out.append(_Frozen(a, keep))
    return out


def freeze_value(x: Any, keep: Callable[[Any], bool], stats: bool = True) -> np.ndarray | _Frozen:
    """A value as it is now: a private copy of a small float value (an ndarray, summarized
    later with the other small values of its graph, see ``_batch_stats``), else a
    :class:`_Frozen` summary; without ``stats`` (a capture that keeps every value and no
    statistics), a private copy of any value.

    >>> a = np.ones(3); f = freeze_value(a, lambda v: True); a[0] = 5.0
    >>> f.tolist(), type(freeze_value(np.arange(3), lambda v: True)).__name__
    ([1.0, 1.0, 1.0], '_Frozen')
    """
    a = observe.native(x)
    return freeze_array(a if a.__class__ is np.ndarray else to_numpy(x), keep, stats)


def freeze_array(a: np.ndarray, keep: Callable[[Any], bool], stats: bool) -> np.ndarray | _Frozen:
    """:func:`freeze_value` of a NumPy array."""
    if not stats or (a.dtype.kind == "f" and a.size <= BATCHED):
        return np.array(a, copy=True)
    return _Frozen(a, keep)


class _Frozen:
    """The summary row of a value (a value not summarized in batches: larger than
    ``BATCHED`` elements, or not float), with a copy of the value when the policy keeps it.
    A value of up to ``LAZY`` elements is copied at forward and summarized when the row is
    first read (at the build, out of the training loop); a larger one is summarized at
    forward (its copy would hold more memory than its statistics cost).

    >>> a = np.arange(40.0); f = _Frozen(a, lambda v: False); a[:] = 0
    >>> f.row[:3], f.head[:2], f.value  # min, max, mean: of the values at forward
    ([0.0, 39.0, 19.5], (0.0, 1.0), None)
    """

    __slots__ = ("_copy", "_made", "kept", "value")

    def __init__(self, a: np.ndarray, keep: Callable[[Any], bool]) -> None:
        self.kept = keep(a)
        if a.size <= LAZY or self.kept:
            # NOTE: order "K", as freeze_array's copy: the statistics then add the elements
            # in the same order as they would on ``a`` (the same numbers)
            self._copy, self._made = np.array(a, copy=True), None
        else:
            self._copy, self._made = None, stats_row(a)
        self.value = self._copy if self.kept else None

    def _stats(self) -> tuple[list, tuple]:
        # NOTE: the copy read first: a thread that finds it gone finds the row made (the row is
        # set before the copy is let go), so two readers at once never summarize None
        copy, made = self._copy, self._made
        if made is None:
            made = self._made = stats_row(copy)
            self._copy = None  # NOTE: ``value`` still holds it when kept
        return made

    @property
    def row(self) -> list:
        """The summary row."""
        return self._stats()[0]

    @property
    def head(self) -> tuple:
        """The first elements (the preview)."""
        return self._stats()[1]

    @classmethod
    def of(cls, row: list, head: tuple, value: np.ndarray | None) -> _Frozen:
        """A summary computed elsewhere (a lazy tensor's, see ``_lazy``)."""
        f = object.__new__(cls)
        f._made, f._copy, f.value, f.kept = (row, head), None, value, value is not None
        return f


LAZY = 16384
"""Values up to this many elements (64 KiB of float32) are summarized when first read, from a
copy made at forward (see :class:`_Frozen`)."""


class NodeMap:
    """``{node: pending record}``: the record in the node's ``observed`` slot (see
    ``tpx.Node``), so it goes with its node; where another observer holds the slot, in a dict
    keyed by weak references (an entry goes when its node is freed). A record in a slot is
    this map's own only if it holds the map's ``token`` (see ``OWNER``): a node recorded under
    another capture reads as absent.

    >>> import tpx as tp
    >>> from tpx import Node, observe
    >>> m = NodeMap(); y = tp.ones(2, requires_grad=True) * 2; node = observe.grad_node(y)
    >>> m[node] = pending_record(0.0, None, [], None, 0, m.token)
    >>> (node in m, m.get(node)[STEP], len(m), NodeMap().get(node))
    (True, 0, 1, None)
    >>> del y, node; len(m)
    0
    """

    __slots__ = ("data", "drop", "token")

    def __init__(self) -> None:
        data: dict[weakref.ref, Any] = {}
        self.data = data
        self.drop = lambda r: data.pop(r, None)  # the callback of each key
        # NOTE: a plain object(): not tracked by the cyclic GC, so neither is a record holding it
        self.token = object()

    def __setitem__(self, node: Any, value: Any) -> None:
        if node.observed is None or self._owns(node.observed):
            node.observed = value
        else:
            self.data[weakref.ref(node, self.drop)] = value

    def get(self, node: Any, default: Any = None) -> Any:
        p = getattr(node, "observed", None)  # NOTE: a leaf's node has the slot too
        if p is not None and self._owns(p):
            return p
        if not self.data:
            return default
        return self.data.get(weakref.ref(node), default)

    def _owns(self, p: Any) -> bool:
        return p.__class__ is tuple and len(p) > OWNER and p[OWNER] is self.token

    def __contains__(self, node: Any) -> bool:
        return self.get(node) is not None

    def __len__(self) -> int:
        return len(self.items())

    def items(self) -> list[tuple[Any, Any]]:
        """The entries whose node is alive (a list: a snapshot). Slow: it looks for the
        nodes among all objects the cyclic GC tracks (only an error's partial graph asks:
        ``Capture.record_error``)."""
        pairs = [(r(), v) for r, v in self.data.copy().items()]
        out = [(n, v) for n, v in pairs if n is not None]
        # NOTE: type(o), not isinstance: reads no attribute of the objects (a __class__ property
        # may run code, e.g. a lazy module's warning); ~0.1-0.2 s on a heap of 1M objects
        nodes = [o for o in gc.get_objects() if issubclass(type(o), Node)]
        return out + [(n, n.observed) for n in nodes if self._owns(n.observed)]


def snapshot_dtype(meta: tuple) -> Any:
    """The NumPy dtype of an output of ``meta`` (``(shape, dtype)``) kept as its bytes (a
    float value of 1 to ``BATCHED`` elements: its summary is made with the others of its
    graph), else None. Cached by identity (TPX shares the metadata tuples).

    >>> snapshot_dtype(((4, 4), np.dtype("float32"))), snapshot_dtype(((0,), np.dtype("float64")))
    (dtype('float32'), None)
    """
    shape, dtype = meta
    ok = isinstance(dtype, np.dtype) and dtype.kind == "f" and 0 < math.prod(shape) <= BATCHED
    if len(_SNAPSHOTS) > 4096:
        _SNAPSHOTS.clear()
    _SNAPSHOTS[id(meta)] = (meta, dtype if ok else None)
    return dtype if ok else None


def snapshot_array(b: bytes, meta: tuple) -> np.ndarray:
    """The value kept as bytes by :func:`frozen_record`, as a (read-only) array."""
    return np.frombuffer(b, meta[1]).reshape(meta[0])


# id(out_meta) -> (out_meta, its snapshot dtype or None); the entry keeps the tuple alive
_SNAPSHOTS: dict[int, tuple[tuple, Any]] = {}
_DTYPES: dict[int, tuple[Any, str]] = {}


def _dtype_name(dtype: Any) -> str:
    # NOTE: keyed by identity (hashing a NumPy dtype is slow); the entry keeps the dtype alive
    hit = _DTYPES.get(id(dtype))
    if hit is None:
        hit = _DTYPES[id(dtype)] = (dtype, "none" if dtype is None else dtype_name(dtype))
    return hit[1]
