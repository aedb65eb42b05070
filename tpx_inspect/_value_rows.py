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


class _Groups:
    """Small float values gathered by (shape, dtype) to be stacked once (one copy): per
    group ``(meta, rows, values, kept positions, kept)``, the values arrays, or the bytes of
    outputs (see ``_pending.frozen_record``) with their ``(shape, dtype)`` as ``meta``; filled by
    ``Summaries._keep``. One shape: all of a group are kept or none."""

    def __init__(self) -> None:
        self.by: dict[Any, tuple[tuple | None, list[int], list[Any], list[int], bool]] = {}

    def stack(self, kept: list, blocks: list) -> None:
        """One read-only block per group into ``blocks`` (with its rows); each kept value
        becomes a view of its block (as ``BatchStore.flush`` makes them)."""
        for meta, rows, xs, at, _kept in self.by.values():
            if meta is None:
                block = np.array(xs)  # NOTE: one shape and dtype: a stack, made in C
                block.flags.writeable = False
            else:
                block = np.frombuffer(b"".join(xs), meta[1]).reshape((len(rows), *meta[0]))
            blocks.append((rows, block))
            if at:
                for k, v in zip(at, list(block)):
                    kept[k] = v


class Summaries:
    """The summary table and previews of the distinct values of one graph record; the full
    values kept by the policy go to the builder's value store."""

    def __init__(self, builder: Any, full: bool, values: list[Any], owns: list[bool]) -> None:
        self.builder = builder
        self.full = full
        self.arrays: list[np.ndarray | None] = []  # None: the row is known (``done``)
        self.vids: list[int] = []
        self.done: dict[int, tuple[list, tuple]] = {}
        self.blocks: list[tuple[list[int], np.ndarray]] = []  # (rows, stacked values)
        self._made: tuple[np.ndarray, np.ndarray] | None = None
        self._keep(values, owns)

    def _keep(self, values: list[Any], owns: list[bool]) -> None:
        store, limit, full = self.builder.store, self.builder.limit, self.full
        if limit < 0:
            limit = math.inf
        prefetched = self.builder.prefetched
        if prefetched:
            values = [prefetched.get(id(x), x) for x in values]
        arrays, vids, done = self.arrays, self.vids, self.done
        ndarray = np.ndarray
        base = len(store)
        kept: list[np.ndarray | None] = []  # NOTE: store ids are base + position, row order
        adopted: list[np.ndarray] = []
        later: list[int] = []
        groups = _Groups()
        by = groups.by
        row = -1
        for x in values:
            row += 1
            if x.__class__ is bytes:  # a small float output (see _pending.frozen_record)
                meta = owns[row]
                arrays.append(None)  # NOTE: its row is made from its group's block
                # NOTE: _Groups.add written out (a call per value); kept or not: per group
                g = by.get(id(meta))
                if g is None:
                    kept_all = full and math.prod(meta[0]) <= limit
                    g = by[id(meta)] = (meta, [], [], [], kept_all)
                g[1].append(row)
                g[2].append(x)
                if g[4]:
                    g[3].append(len(kept))
                    vids.append(base + len(kept))
                    kept.append(None)  # NOTE: a view of its group's block
                else:
                    vids.append(-1)
            elif owns[row] and x.__class__ is ndarray:
                arrays.append(x)
                if full and x.size <= limit:
                    vids.append(base + len(kept))
                    kept.append(x)
                    adopted.append(x)
                else:
                    vids.append(-1)
            elif x.__class__ is _Frozen:
                arrays.append(None)
                done[row] = (x._row, x.head)
                if full and x.kept:
                    vids.append(base + len(kept))
                    kept.append(x.value)
                    adopted.append(x.value)
                else:
                    vids.append(-1)
            else:
                # NOTE: to_numpy written out for a NumPy-backed tensor; a gradient is held
                # as its array already (see capture.held)
                a = x if x.__class__ is ndarray else native(x)
                if a.__class__ is not ndarray:
                    a = to_numpy(x)
                t = a.dtype
                size = a.size
                if t.kind == "f" and 0 < size <= BATCHED:
                    # NOTE: copied with its group (BatchStore.flush's copy, made once)
                    arrays.append(None)
                    key = (a.shape, t.char)
                    g = by.get(key)
                    if g is None:
                        g = by[key] = (None, [], [], [], full and size <= limit)
                    g[1].append(row)
                    g[2].append(a)
                    if g[4]:
                        g[3].append(len(kept))
                        vids.append(base + len(kept))
                        kept.append(None)
                    else:
                        vids.append(-1)
                    continue
                arrays.append(a)
                if full and size <= limit:
                    later.append(base + len(kept))
                    vids.append(base + len(kept))
                    kept.append(a)
                else:
                    vids.append(-1)
        groups.stack(kept, self.blocks)
        store.extend(kept, later, adopted)  # type: ignore[arg-type]

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
        # NOTE: column-major, as the sidecar stores them and a load gives them: a save writes
        # them without a transposing copy (24 MB at 100k nodes), and the batched rows'
        # column writes are no slower
        table = np.zeros((len(self.vids), len(SUMMARY_COLUMNS)), np.float64, order="F")
        table[:, 8] = self.vids
        self.builder.store.flush()
        if not self.builder.stats:  # NOTE: the values only (see Capture's values="raw")
            table[:, :8] = math.nan
            return table, np.zeros((0, PREVIEW))
        previews = np.full((len(self.vids), PREVIEW), math.nan, order="F") if self.full else None
        fill_rows(self.arrays, table, previews)
        for rows, block in self.blocks:
            fill_block(rows, block, table, previews)
        for i, (row, head) in self.done.items():
            table[i, :8] = row
            if previews is not None:
                previews[i, : len(head)] = head
                table[i, 9] = len(head)
        return table, previews if previews is not None else np.zeros((0, PREVIEW))


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
