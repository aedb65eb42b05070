"""The value tables of one graph record (summaries, previews and the rows that point into them).

A backward reports about three values per node (an output, a gradient, a constant) and most
of them several times (a gradient is a rule's output, a contribution, a total and the next
node's input gradient). The values are first listed column by column (outputs, gradients,
each edge's input gradient and constant) with their positions in reading order (node by node);
the repeats are then found by ``id`` with NumPy, each distinct value is summarized once (see
``_value_summaries``), and the row columns are gathered with NumPy. A value's row is the rank
of its first reading position among the distinct values'.
"""

from __future__ import annotations

import math
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from tpx import AccumulateGrad
from tpx_inspect._pending import CONSTS, N_CONSTS, OUT, RAW, SAVED, SECONDS, pending_record
from tpx_inspect._value_summaries import _KINDS, Summaries
from tpx_inspect.records import GraphTables

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


def value_tables(
    builder: Any, raw: list, pend: list, ex: dict, b: Any, index: dict, full: bool
) -> GraphTables | None:
    """The tables of one graph record; None for a record that is not ``full`` and holds a
    NaN or Inf (the caller then builds it in full)."""
    vals = ValueList()
    starts, meta, times = _list_nodes(vals, raw, pend, ex, full, builder.leaves)
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


def _list_nodes(
    vals: ValueList, raw: list, pend: list, ex: dict, full: bool, leaves: dict
) -> tuple:
    """List the values of the nodes column by column (outputs, gradients, then with ``full``
    each edge's input gradient and constant) with their reading positions (see
    :class:`ValueList`); returns where each node's values start in reading order, its
    (position, released) pair and its (forward, backward) seconds, as arrays."""
    n = len(raw)
    recs = [_NO_RECORD if p is None else p for p in pend]
    runs = list(map(ex.get, range(n), repeat(_NO_RUN, n)))
    outs, owns = _outputs(raw, pend, recs, leaves)
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


def _outputs(raw: list, pend: list, recs: list, leaves: dict) -> tuple[list, list]:
    """Each node's output as the record holds it (``_pending.value_of``; a leaf's variable,
    or its snapshot in ``leaves``) and its ``own`` flag: True for the capture's copy, the
    ``(shape, dtype)`` of one kept as bytes (see ``Summaries``)."""
    outs = list(map(_out, recs))
    owns: list[Any] = list(map(_is_not_none, outs))
    kinds = np.fromiter(map(_KINDS.get, map(type, outs), repeat(2, len(outs))), np.int8)
    for i in np.flatnonzero(kinds == 0).tolist():
        owns[i] = raw[i].out_meta
    for i in np.flatnonzero(np.fromiter(map(id, outs), np.int64, len(outs)) == _NONE).tolist():
        n, p = raw[i], pend[i]
        if n.__class__ is AccumulateGrad:
            outs[i] = leaves.get(n, n.variable)
        elif p is not None:
            outs[i] = p[RAW]  # NOTE: the live P10 output (a step not frozen)
    return outs, owns


def _list_edges(
    vals: ValueList, raw: list, recs: list, runs: list, owns: list, k: np.ndarray,
    starts: np.ndarray, pos: list,
) -> None:  # fmt: skip
    """Each edge's input gradient and constant (None where the node did not run or has no
    record), with the output's ``own`` flag for the constant (frozen with it)."""
    gins = _padded(list(map(_gins, runs)), k)
    consts = _padded([p[CONSTS : CONSTS + p[N_CONSTS]] for p in recs], k)  # consts_of, inlined
    m = int(k.sum())
    edge = np.repeat(starts + 2, k) + 2 * (np.arange(m) - np.repeat(np.cumsum(k) - k, k))
    vals.seq += chain.from_iterable(gins)
    vals.seq += chain.from_iterable(consts)
    own = np.fromiter(map(bool, owns), bool, len(owns))
    vals.owns += [False] * m
    vals.owns += np.repeat(own, k).tolist()
    pos += (edge, edge + 1)


def _padded(seqs: list, k: np.ndarray) -> list:
    """``seqs`` with each ``seqs[i]`` cut or padded with None to ``k[i]`` items."""
    lens = np.fromiter(map(len, seqs), np.int64, len(seqs))
    for i in np.flatnonzero(lens != k).tolist():
        seqs[i] = (*seqs[i], *(None,) * int(k[i]))[: k[i]]
    return seqs


# NOTE: a leaf's record and a node that did not run, for the column reads above
_NO_RECORD = pending_record(0.0, None, [], None, -1)
_NO_RUN = (None, (), math.nan, False, -1)
_out, _seconds, _saved = itemgetter(OUT), itemgetter(SECONDS), itemgetter(SAVED)
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
