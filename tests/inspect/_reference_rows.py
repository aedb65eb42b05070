"""The value tables of a graph record made the readable way, one value at a time: the
reference that ``tpx_inspect._value_rows`` (which lists the values first and finds the repeats
with NumPy) is compared with (tests/inspect/test_capture_rows.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tpx import AccumulateGrad
from tpx_inspect._batch_stats import fill_rows
from tpx_inspect._pending import OUT, RAW, SAVED, SECONDS, _Frozen, consts_of, snapshot_array
from tpx_inspect.records import SUMMARY_COLUMNS, GraphTables
from tpx_inspect.summary import PREVIEW, to_numpy


class _Tables:
    """Collects the summary rows of one graph; a value summarized twice gets one row. Rows
    are made at the end (:meth:`summaries`), the small float values all together."""

    def __init__(self, builder: Any, full: bool) -> None:
        self.builder = builder
        self.full = full
        self.arrays: list[np.ndarray | None] = []  # None: the row is known (``done``)
        self.vids: list[int] = []
        self.done: dict[int, tuple[list, tuple]] = {}
        self.memo: dict[int, int] = {}
        # NOTE: every value added, kept alive: the memo is keyed by id, and a value made here
        # for the read (a leaf snapshot's summary as a _Frozen) would otherwise be freed and
        # its id reused by the next one, which then read as the same value
        self.held: list[Any] = []
        self._made: tuple[np.ndarray, np.ndarray] | None = None
        # NOTE: read once: add() runs about three times per node
        self._prefetched = builder.prefetched
        self._limit = builder.limit
        self._store = builder.store

    def add(self, x: Any, own: bool = False) -> int:
        """The row of ``x``; ``own``: an ndarray ``x`` is the capture's private copy (see
        ``_pending.freeze_value``), kept without copying it again."""
        if x is None:
            return -1
        key = id(x)
        row = self.memo.get(key)
        if row is not None:
            return row
        row = self.memo[key] = len(self.vids)
        self.held.append(x)
        if self._prefetched:
            x = self._prefetched.get(key, x)
        limit = self._limit
        if own and x.__class__ is np.ndarray:
            self.arrays.append(x)
            kept = self.full and (limit < 0 or x.size <= limit)  # NOTE: GraphBuilder.keep
            self.vids.append(self._store.adopt(x) if kept else -1)
        elif x.__class__ is _Frozen:
            self.arrays.append(None)
            self.done[row] = (x.row, x.head)
            self.vids.append(self._store.adopt(x.value) if self.full and x.kept else -1)
        else:
            a = to_numpy(x)
            self.arrays.append(a)
            kept = self.full and (limit < 0 or a.size <= limit)
            self.vids.append(self._store.reserve(a) if kept else -1)
        return row

    def finite(self) -> bool:
        table = self.summaries()[0]
        return not table[:, 5:7].any()

    def summaries(self) -> tuple[np.ndarray, np.ndarray]:
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
        fill_rows(self.arrays, table, previews)
        for i, (row, head) in self.done.items():
            table[i, :8] = row
            if previews is not None:
                previews[i, : len(head)] = head
                table[i, 9] = len(head)
        return table, previews if previews is not None else np.zeros((0, PREVIEW))


def reference_tables(
    builder: Any, raw: list, pend: list, ex: dict, b: Any, index: dict, full: bool
) -> GraphTables | None:
    t = _Tables(builder, full)
    add, hit = t.add, t.memo.get
    # NOTE: rows and times as flat lists (4 and 2 items per node): one NumPy conversion of
    # a flat list costs half that of a list of tuples
    rows: list[int] = []
    times: list[float] = []
    gout: list[int] = []
    consts: list[int] = []
    # NOTE: `-1 if x is None else hit(id(x))`, then add() only for a value not seen yet:
    # most values of a backward are seen twice or more (a gradient is a rule's output, a
    # contribution, a total and the next node's input gradient)
    for i, n in enumerate(raw):
        p = pend[i]
        leaf = n.__class__ is AccumulateGrad
        if leaf or p is None:
            # NOTE: a deferred build reads a leaf's value as its backward left it (_deferred)
            snap = builder.leaves.get(n) if leaf else None
            x, own = (n.variable if snap is None else snap.value) if leaf else None, False
            if snap is not None and snap.summary is not None:  # never kept: its summary
                x = _Frozen.of(*snap.summary, None)
        else:  # NOTE: _pending.value_of written out (a call per node)
            x = p[OUT]
            own = x is not None
            if not own:
                x = p[RAW]
            elif x.__class__ is bytes:  # NOTE: a small float output kept as its bytes
                x = snapshot_array(x, n.out_meta)
        out = -1 if x is None else hit(id(x))
        if out is None:
            out = add(x, own)
        e = ex.get(i)
        fwd = p[SECONDS] if p is not None else 0.0
        if e is None:
            rows += (out, -1, -1, -1)
            times += (fwd, math.nan)
        else:
            released = e[4] if e[3] and p is not None and p[SAVED] else -1
            x = e[0]
            g = -1 if x is None else hit(id(x))
            rows += (out, add(x) if g is None else g, e[4], released)
            times += (fwd, e[2])
        if full and not leaf:
            gins = e[1] if e is not None else ()
            k = len(gins)
            pc = consts_of(p) if p is not None else None
            for j in range(len(n.edges)):
                x = gins[j] if j < k else None
                r = -1 if x is None else hit(id(x))
                gout.append(add(x) if r is None else r)
                x = pc[j] if pc is not None else None
                r = -1 if x is None else hit(id(x))
                consts.append(add(x, own) if r is None else r)
    if not full and not t.finite():
        return None
    accs = _accumulations(b, index, t) if full else []
    summaries, previews = t.summaries()
    return GraphTables(
        summaries, previews, np.array(rows, np.int64).reshape(-1, 4),
        np.array(times, np.float64).reshape(-1, 2), np.array(gout, np.int64),
        np.array(consts, np.int64), np.array(accs, np.int64).reshape(-1, 4),
    )  # fmt: skip


def _accumulations(b: Any, index: dict, t: _Tables) -> list[int]:
    """The accumulation rows, flat (4 items per row)."""
    if b is None:
        return []
    out: list[int] = []
    for node, g in b.root_grads.items():
        if node in index:
            row = t.add(g)
            out += (index[node], -1, row, row)
    add, get, hit = t.add, index.get, t.memo.get
    for target, contribution, total, source in b.sums():
        i = get(target)
        if i is not None:
            c = hit(id(contribution)) if contribution is not None else -1
            c = add(contribution) if c is None else c
            s = hit(id(total)) if total is not None else -1
            out += (i, get(source, -1), c, add(total) if s is None else s)
    return out
