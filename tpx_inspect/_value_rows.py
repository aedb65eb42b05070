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
from itertools import chain, count, repeat
from operator import attrgetter, itemgetter
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
    the capture's private copy, see ``_pending.freeze_value``, kept without another copy;
    for an output kept as bytes, its ``(shape, dtype)``). ``pos``: where each listed value
    stands in the record's reading order (node by node: output, gradient, then per edge its
    gradient and constant; then the accumulations), when they are listed column by column;
    values listed after ``pos`` ends follow in order."""

    def __init__(self) -> None:
        self.seq: list[Any] = []
        self.owns: list[Any] = []
        self.pos = np.empty(0, np.int64)

    def rows(self) -> tuple[np.ndarray, list[Any], list[bool]]:
        """The row of every value by its reading position (-1 for None), and the distinct
        values with their ``own`` flags, in row order: a value's row is the rank of its first
        reading position among the distinct values'."""
        seq = self.seq
        n = len(seq)
        ids = np.fromiter(map(id, seq), np.int64, n)
        pos = self.pos
        if len(pos) < n:
            pos = np.concatenate([pos, np.arange(len(pos), n)])
        order = np.lexsort((pos, ids))  # NOTE: by value, each value's first reading first
        sid = ids[order]
        head = np.ones(n, bool)
        head[1:] = sid[1:] != sid[:-1]
        first = order[head]  # the list index of each distinct value's first reading
        group = np.cumsum(head) - 1
        fpos = pos[first]
        none = np.flatnonzero(sid[head] == _NONE)
        if len(none):
            fpos[none] = n  # NOTE: sorts last, gets no row
        rank = np.argsort(fpos, kind="stable")
        row_of = np.empty(len(first), np.int64)
        row_of[rank] = np.arange(len(first))
        if len(none):
            row_of[none] = -1
            rank = rank[:-1]
        rows = np.empty(n, np.int64)
        rows[pos[order]] = row_of[group]
        at = first[rank].tolist()
        return rows, list(map(seq.__getitem__, at)), list(map(self.owns.__getitem__, at))


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
    nodes_end = len(vals.seq)  # NOTE: reading positions 0 .. nodes_end - 1 (see ValueList)
    accs = _list_accumulations(vals, b, index) if full else []
    rows, distinct, owns = vals.rows()
    t = Summaries(builder, full, distinct, owns)
    if not full and not t.finite():
        return None
    r = rows
    s = starts
    table = np.empty((len(starts), 4), np.int64)
    table[:, 0], table[:, 1] = r[s], r[s + 1]
    table[:, 2:] = meta
    edge = np.ones(nodes_end, bool)
    edge[s], edge[s + 1] = False, False
    e = r[:nodes_end][edge]
    acc = np.array(accs, np.int64).reshape(-1, 4)
    if len(acc):
        acc[:, 2:] = r[nodes_end:].reshape(-1, 2)
    summaries, previews = t.summaries()
    return GraphTables(
        summaries, previews, table, times,
        np.ascontiguousarray(e[0::2]), np.ascontiguousarray(e[1::2]), acc,
    )  # fmt: skip


def _list_nodes(vals: ValueList, raw: list, pend: list, ex: dict, full: bool) -> tuple:
    """List the values of the nodes column by column (outputs, gradients, then with ``full``
    each edge's input gradient and constant) with their reading positions (see
    :class:`ValueList`); returns where each node's values start in reading order, its
    (position, released) pair and its (forward, backward) seconds, as arrays."""
    n = len(raw)
    recs = [_NO_RECORD if p is None else p for p in pend]
    runs = list(map(ex.get, range(n), repeat(_NO_RUN, n)))
    outs, owns = _outputs(raw, pend, recs)
    k = np.zeros(n, np.int64)
    if full:
        k = np.fromiter(map(len, map(_edges, raw)), np.int64, n)
    starts = np.zeros(n, np.int64)
    np.cumsum(2 + 2 * k[:-1], out=starts[1:])
    vals.seq = outs + list(map(_first, runs))
    vals.owns = owns + [False] * n
    pos = [starts, starts + 1]
    if full and k.any():
        _list_edges(vals, raw, recs, runs, owns, k, starts, pos)
    vals.pos = np.concatenate(pos)
    at = np.fromiter(map(_at, runs), np.int64, n)
    freed = np.fromiter(map(_freed, runs), bool, n)
    saved = np.fromiter(map(bool, map(_saved, recs)), bool, n)  # NOTE: _pending.SAVED
    meta = np.stack([at, np.where(freed & saved, at, -1)], axis=1)
    times = np.stack(
        [np.fromiter(map(_seconds, recs), np.float64, n), np.fromiter(map(_ran, runs), float, n)],
        axis=1,
    )
    return starts, meta, times


def _outputs(raw: list, pend: list, recs: list) -> tuple[list, list]:
    """Each node's output as the record holds it (``_pending.value_of``; a leaf's variable)
    and its ``own`` flag: True for the capture's copy, the ``(shape, dtype)`` of one kept as
    bytes (see ``Summaries``)."""
    outs = list(map(_out, recs))
    owns: list[Any] = list(map(_is_not_none, outs))
    kinds = np.fromiter(map(_KINDS.get, map(type, outs), repeat(2, len(outs))), np.int8)
    for i in np.flatnonzero(kinds == 0).tolist():
        owns[i] = raw[i].out_meta
    for i in np.flatnonzero(np.fromiter(map(id, outs), np.int64, len(outs)) == _NONE).tolist():
        n, p = raw[i], pend[i]
        if n.__class__ is AccumulateGrad:
            outs[i] = n.variable
        elif p is not None:
            outs[i] = p[2]  # RAW: the live P10 output (a step not frozen)
    return outs, owns


def _list_edges(
    vals: ValueList, raw: list, recs: list, runs: list, owns: list, k: np.ndarray,
    starts: np.ndarray, pos: list,
) -> None:  # fmt: skip
    """Each edge's input gradient and constant (None where the node did not run or has no
    record), with the output's ``own`` flag for the constant (frozen with it)."""
    gins = list(map(_gins, runs))
    consts = [p[7 : 7 + p[6]] for p in recs]  # NOTE: _pending.consts_of, per node
    lens = np.fromiter(map(len, gins), np.int64, len(gins))
    for i in np.flatnonzero(lens != k).tolist():
        gins[i] = (*gins[i], *(None,) * int(k[i]))[: k[i]]
    lens = np.fromiter(map(len, consts), np.int64, len(consts))
    for i in np.flatnonzero(lens != k).tolist():
        consts[i] = (*consts[i], *(None,) * int(k[i]))[: k[i]]
    m = int(k.sum())
    edge = np.repeat(starts + 2, k) + 2 * (np.arange(m) - np.repeat(np.cumsum(k) - k, k))
    vals.seq += chain.from_iterable(gins)
    vals.seq += chain.from_iterable(consts)
    own = np.fromiter(map(bool, owns), bool, len(owns))
    vals.owns += [False] * m
    vals.owns += np.repeat(own, k).tolist()
    pos += (edge, edge + 1)


# NOTE: a leaf's record and a node that did not run, for the column reads above
_NO_RECORD = (0.0, None, None, (), -1, None, 0)
_NO_RUN = (None, (), math.nan, False, -1)
_out, _seconds, _saved = itemgetter(1), itemgetter(0), itemgetter(3)
_first, _gins, _ran, _freed, _at = (itemgetter(j) for j in range(5))
_edges = attrgetter("edges")


def _is_not_none(x: Any) -> bool:
    return x is not None


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
