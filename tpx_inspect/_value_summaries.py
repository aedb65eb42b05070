"""The summary table and previews of the distinct values of one graph record.

Values are sorted by kind once: small float values of one shape and dtype are stacked into one
block and summarized with one vectorized call per block (see ``_batch_stats``); the full
values the policy keeps go to the builder's value store, in row order.
"""

from __future__ import annotations

import math
from itertools import count, repeat
from operator import attrgetter
from typing import Any

import numpy as np

from tpx_inspect._batch_stats import BATCHED, _group, _one, fill_rows, views
from tpx_inspect._deferred import LeafSnapshot
from tpx_inspect._pending import _Frozen, native
from tpx_inspect.records import SUMMARY_COLUMNS
from tpx_inspect.summary import PREVIEW, to_numpy


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
                kept.add(r, views(block))

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
                    kept.add(r, views(block))
                continue
            for row, k in zip(r.tolist(), at.tolist()):
                self._single(row, arrs[k], limit, kept, adopt=bool(own[row]))

    def _singles(self, rows: np.ndarray, values: list, limit: float, kept: _Kept) -> None:
        """A summary made at forward time (``_Frozen``), a leaf's snapshot (see ``_deferred``),
        or a value to convert first."""
        for row in rows.tolist():
            x = values[row]
            if x.__class__ is _Frozen:
                self.done[row] = (x.row, x.head)
                if self.full and x.kept:
                    kept.add_one(row, x.value, adopt=True)
            elif x.__class__ is LeafSnapshot:  # NOTE: the capture's copy: kept as it is
                if x.summary is not None:  # never kept: summarized already
                    self.done[row] = x.summary
                else:
                    self._single(row, x.value, limit, kept, adopt=True)
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
        # NOTE: column-major, as the sidecar stores them and a load gives them: a save writes
        # them without a transposing copy (24 MB at 100k nodes), and the batched rows'
        # column writes are no slower (i13s)
        table = np.zeros((len(self.vids), len(SUMMARY_COLUMNS)), np.float64, order="F")
        table[:, 8] = self.vids
        self.builder.store.flush()
        if not self.builder.stats:  # NOTE: the values only (see Capture's values="raw")
            table[:, :8] = math.nan
            return table, np.zeros((0, PREVIEW))
        previews = np.full((len(self.vids), PREVIEW), math.nan, order="F") if self.full else None
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
