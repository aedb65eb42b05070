"""The value tables of one graph record (summaries, previews and the rows that point into them).

A backward reports about three values per node (an output, a gradient, a constant) and most
of them several times (a gradient is a rule's output, a contribution, a total and the next
node's input gradient). The values are first listed, in the order in which their rows are
numbered, by one cheap pass over the nodes; the repeats are then found with dicts keyed by
``id`` (built in C), each distinct value is handled once, and the row columns are gathered
with NumPy. A value's row is the position of its first appearance among the distinct values.
"""

from __future__ import annotations

import math
from itertools import count, repeat
from operator import attrgetter
from typing import Any

import numpy as np

from tpx import AccumulateGrad
from tpx_inspect._batch_stats import BATCHED, _group, _one, fill_rows
from tpx_inspect._pending import _Frozen, native
from tpx_inspect.records import SUMMARY_COLUMNS, GraphTables
from tpx_inspect.summary import PREVIEW, to_numpy

_NONE = id(None)


class ValueList:
    """The values of one graph record, listed with their ``own`` flags (an ndarray that is
    the capture's private copy, see ``_pending.freeze_value``, kept without another copy)."""

    def __init__(self) -> None:
        self.seq: list[Any] = []
        self.owns: list[bool] = []

    def rows(self) -> tuple[np.ndarray, list[Any], list[bool]]:
        """The row of every listed value (-1 for None), and the distinct values with their
        ``own`` flags, in row order."""
        seq = self.seq
        ids = np.fromiter(map(id, seq), np.int64, len(seq))
        uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        none = np.searchsorted(uniq, _NONE)
        has_none = none < len(uniq) and uniq[none] == _NONE
        if has_none:
            first[none] = len(seq)  # NOTE: sorts last, gets no row
        order = np.argsort(first, kind="stable")
        row_of = np.empty(len(uniq), np.int64)
        row_of[order] = np.arange(len(uniq))
        if has_none:
            row_of[none] = -1
            order = order[:-1]
        at = first[order].tolist()
        return row_of[inverse], list(map(seq.__getitem__, at)), list(map(self.owns.__getitem__, at))


class Summaries:
    """The summary table and previews of the distinct values of one graph record; the full
    values kept by the policy go to the builder's value store.

    The values are sorted by kind once (in C): small float outputs kept as bytes (see
    ``_pending.frozen_record``) and NumPy arrays of one (shape, dtype) each make one stacked
    block, summarized with one vectorized call and kept as views of it; the rest (a summary
    made at forward time, a capture's own copy, a value of another backend, a large or
    non-float value) one at a time."""

    def __init__(self, builder: Any, full: bool, values: list[Any], owns: list[Any]) -> None:
        self.builder = builder
        self.full = full
        self.vids = np.empty(0, np.int64)  # store id of each row's kept value, else -1
        self.singles: tuple[list[int], list[np.ndarray]] = ([], [])  # summarized one by one
        self.done: dict[int, tuple[list, tuple]] = {}
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, stacked values)
        self._made: tuple[np.ndarray, np.ndarray] | None = None
        self._keep(values, owns)

    def _keep(self, values: list[Any], owns: list[Any]) -> None:
        store, limit = self.builder.store, self.builder.limit
        if limit < 0:
            limit = math.inf
        prefetched = self.builder.prefetched
        if prefetched:
            values = [prefetched.get(id(x), x) for x in values]
        n = len(values)
        kinds = np.fromiter(map(_KINDS.get, map(type, values), repeat(2, n)), np.int8, n)
        own = np.fromiter(map(bool, owns), bool, n)  # NOTE: the capture's copy (see ValueList)
        kept = _Kept(n)
        self._bytes_blocks(np.flatnonzero(kinds == 0), values, owns, limit, kept)
        self._array_blocks(np.flatnonzero(kinds == 1), values, own, limit, kept)
        self._singles(np.flatnonzero(kinds == 2), values, limit, kept)
        self.vids = kept.ids(len(store))
        store.extend(kept.values(), kept.later(len(store)), kept.adopted)  # type: ignore[arg-type]

    def _bytes_blocks(
        self, rows: np.ndarray, values: list, owns: list, limit: float, kept: _Kept
    ) -> None:
        """Small float outputs kept as their bytes: one block per (shape, dtype) record."""
        if not len(rows):
            return
        metas = list(map(owns.__getitem__, rows.tolist()))  # NOTE: (shape, dtype), see _list_nodes
        for at in _split(np.fromiter(map(id, metas), np.int64, len(metas))):
            meta = metas[at[0]]
            r = rows[at]
            xs = list(map(values.__getitem__, r.tolist()))
            block = np.frombuffer(b"".join(xs), meta[1]).reshape((len(r), *meta[0]))
            self.blocks.append((r, block))
            if self.full and math.prod(meta[0]) <= limit:
                kept.add(r, list(block))

    def _array_blocks(
        self, rows: np.ndarray, values: list, own: np.ndarray, limit: float, kept: _Kept
    ) -> None:
        """NumPy arrays (gradients, constants): small float ones of one shape and dtype
        stacked into one block (one copy, as ``BatchStore.flush`` makes; kept as views of it),
        the others one by one (a capture's own copy kept as it is, another copied)."""
        if not len(rows):
            return
        arrs = list(map(values.__getitem__, rows.tolist()))
        keys = list(zip(map(_shape, arrs), map(id, map(_dtype, arrs))))
        first: dict[tuple, int] = {}
        group = np.fromiter(map(first.setdefault, keys, count()), np.int64, len(keys))
        for at in _split(group):
            a = arrs[at[0]]
            r = rows[at]
            if a.dtype.kind == "f" and 0 < a.size <= BATCHED:
                block = np.array(list(map(arrs.__getitem__, at.tolist())))  # NOTE: a stack, in C
                block.flags.writeable = False
                self.blocks.append((r, block))
                if self.full and a.size <= limit:
                    kept.add(r, list(block))
                continue
            for row, k in zip(r.tolist(), at.tolist()):
                self._single(row, arrs[k], limit, kept, adopt=bool(own[row]))

    def _singles(self, rows: np.ndarray, values: list, limit: float, kept: _Kept) -> None:
        """A summary made at forward time (``_Frozen``), or a value to convert first."""
        for row in rows.tolist():
            x = values[row]
            if x.__class__ is _Frozen:
                self.done[row] = (x._row, x.head)
                if self.full and x.kept:
                    kept.add_one(row, x.value, adopt=True)
            else:
                a = native(x)
                self._single(row, a if a.__class__ is np.ndarray else to_numpy(x), limit, kept)

    def _single(
        self, row: int, a: np.ndarray, limit: float, kept: _Kept, adopt: bool = False
    ) -> None:
        self.singles[0].append(row)
        self.singles[1].append(a)
        if self.full and a.size <= limit:
            kept.add_one(row, a, adopt=adopt, later=not adopt)

    def finite(self) -> bool:
        """No NaN or Inf among the values."""
        table = self.summaries()[0]
        return not table[:, 5:7].any()

    def summaries(self) -> tuple[np.ndarray, np.ndarray]:
        """The summary table and the previews (empty without ``full``)."""
        if self._made is None:
            self._made = self._make()
        return self._made

    def _make(self) -> tuple[np.ndarray, np.ndarray]:
        table = np.zeros((len(self.vids), len(SUMMARY_COLUMNS)), np.float64)
        table[:, 8] = self.vids
        self.builder.store.flush()
        if not self.builder.stats:  # NOTE: the values only (see Capture's values="raw")
            table[:, :8] = math.nan
            return table, np.zeros((0, PREVIEW))
        previews = np.full((len(self.vids), PREVIEW), math.nan) if self.full else None
        rows, arrays = self.singles
        if rows:  # NOTE: fill_rows on these rows alone, then put in place
            part = np.zeros((len(rows), len(SUMMARY_COLUMNS)))
            heads = np.full((len(rows), PREVIEW), math.nan) if previews is not None else None
            fill_rows(arrays, part, heads)
            table[rows, :8], table[rows, 9] = part[:, :8], part[:, 9]
            if previews is not None:
                previews[rows] = heads
        for r, block in self.blocks:
            fill_block(r, block, table, previews)
        for i, (row, head) in self.done.items():
            table[i, :8] = row
            if previews is not None:
                previews[i, : len(head)] = head
                table[i, 9] = len(head)
        return table, previews if previews is not None else np.zeros((0, PREVIEW))


class _Kept:
    """The values of one record that the store keeps, gathered by group and put in row order
    at the end (store ids follow the rows)."""

    def __init__(self, n: int) -> None:
        self.mask = np.zeros(n, bool)
        self.rows: list[np.ndarray] = []
        self.vals: list[Any] = []
        self.later_rows: list[int] = []
        self.adopted: list[np.ndarray] = []
        self._pos = np.empty(0, np.int64)

    def add(self, rows: np.ndarray, vals: list) -> None:
        self.mask[rows] = True
        self.rows.append(rows)
        self.vals += vals

    def add_one(self, row: int, a: np.ndarray, adopt: bool = False, later: bool = False) -> None:
        self.mask[row] = True
        self.rows.append(np.array([row]))
        self.vals.append(a)
        if adopt:
            self.adopted.append(a)
        if later:
            self.later_rows.append(row)

    def ids(self, base: int) -> np.ndarray:
        """The store id of each row's kept value (-1: none)."""
        self._pos = np.cumsum(self.mask) - 1
        return np.where(self.mask, base + self._pos, -1)

    def values(self) -> list:
        """The kept values in row order."""
        if not self.rows:
            return []
        order = np.argsort(np.concatenate(self.rows), kind="stable")
        return list(map(self.vals.__getitem__, order.tolist()))

    def later(self, base: int) -> list[int]:
        """The store ids of the values to copy at the store's next flush."""
        return (base + self._pos[self.later_rows]).tolist() if self.later_rows else []


def _split(keys: np.ndarray) -> list[np.ndarray]:
    """Positions of ``keys`` grouped by equal key (each group in increasing order)."""
    if not len(keys) or (keys == keys[0]).all():
        return [np.arange(len(keys))]
    order = np.argsort(keys, kind="stable")
    cuts = np.flatnonzero(keys[order][1:] != keys[order][:-1]) + 1
    return np.split(order, cuts)


_KINDS = {bytes: 0, np.ndarray: 1}
_shape, _dtype = attrgetter("shape"), attrgetter("dtype")


def fill_block(
    rows: list[int], block: np.ndarray, table: np.ndarray, previews: np.ndarray | None
) -> None:
    """:func:`~tpx_inspect._batch_stats.fill_rows` for values stacked already (``block[k]``
    is the value of row ``rows[k]``): the same reductions, so the same numbers."""
    if len(rows) == 1:
        _one(rows[0], block[0], table, previews)
    else:
        _group(rows, block, table, previews)  # type: ignore[arg-type]


def value_tables(
    builder: Any, raw: list, pend: list, ex: dict, b: Any, index: dict, full: bool
) -> GraphTables | None:
    """The tables of one graph record; None for a record that is not ``full`` and holds a
    NaN or Inf (the caller then builds it in full)."""
    vals = ValueList()
    starts, meta, times = _list_nodes(vals, raw, pend, ex, full)
    nodes_end = len(vals.seq)
    accs = _list_accumulations(vals, b, index) if full else []
    rows, distinct, owns = vals.rows()
    t = Summaries(builder, full, distinct, owns)
    if not full and not t.finite():
        return None
    r = rows
    s = np.array(starts, np.int64)
    table = np.empty((len(starts), 4), np.int64)
    table[:, 0], table[:, 1] = r[s], r[s + 1]
    table[:, 2:] = np.array(meta, np.int64).reshape(-1, 2)
    edge = np.ones(nodes_end, bool)
    edge[s], edge[s + 1] = False, False
    e = r[:nodes_end][edge]
    acc = np.array(accs, np.int64).reshape(-1, 4)
    if len(acc):
        acc[:, 2:] = r[nodes_end:].reshape(-1, 2)
    summaries, previews = t.summaries()
    return GraphTables(
        summaries, previews, table, np.array(times, np.float64).reshape(-1, 2),
        np.ascontiguousarray(e[0::2]), np.ascontiguousarray(e[1::2]), acc,
    )  # fmt: skip


def _list_nodes(vals: ValueList, raw: list, pend: list, ex: dict, full: bool) -> tuple:
    """List each node's output and gradient, then (``full``) its input gradient and constant
    per edge; returns where each node's values start, its (position, released) pair and its
    (forward, backward) seconds, flat."""
    seq, owns = vals.seq, vals.owns
    starts: list[int] = []
    meta: list[int] = []
    times: list[float] = []
    nan = math.nan
    for i, n in enumerate(raw):
        p = pend[i]
        leaf = n.__class__ is AccumulateGrad
        if leaf or p is None:
            x, own = (n.variable if leaf else None), False
        else:  # NOTE: _pending.value_of written out (a call per node); p: a pending record
            x = p[1]  # OUT
            own = x is not None
            if not own:
                x = p[2]  # RAW
            elif x.__class__ is bytes:  # its (shape, dtype) in place of the flag (see _keep)
                own = n.out_meta
        starts.append(len(seq))
        e = ex.get(i)
        fwd = p[0] if p is not None else 0.0  # SECONDS
        if e is None:
            seq += (x, None)
            meta += (-1, -1)
            times += (fwd, nan)
        else:
            seq += (x, e[0])
            meta += (e[4], e[4] if e[3] and p is not None and p[3] else -1)  # SAVED
            times += (fwd, e[2])
        owns += (own, False)
        if full and not leaf:
            gins = e[1] if e is not None else ()
            k = len(gins)
            for j in range(len(n.edges)):  # NOTE: p[7 + j]: a constant (see _pending.CONSTS)
                seq += (gins[j] if j < k else None, p[7 + j] if p is not None else None)
                owns += (False, own)  # NOTE: a constant frozen with the output is a copy too
    return starts, meta, times


def _list_accumulations(vals: ValueList, b: Any, index: dict) -> list[int]:
    """List the (contribution, total) of each accumulation into a node of the graph (the
    roots' given gradients first); returns the rows' (target, source, -, -), flat."""
    if b is None:
        return []
    seq, owns = vals.seq, vals.owns
    out: list[int] = []
    for node, g in b.root_grads.items():
        if node in index:
            out += (index[node], -1, -1, -1)
            seq += (g, g)
            owns += (False, False)
    get = index.get
    acc = iter(b.accs)  # NOTE: BackwardRecords.sums written out: four items each
    for target, contribution, total, source in zip(acc, acc, acc, acc):
        i = get(target)
        if i is not None:
            out += (i, get(source, -1), -1, -1)
            seq += (contribution, total)
            owns += (False, False)
    return out
