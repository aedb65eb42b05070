"""Summary rows of many small float arrays at once.

A captured step summarizes three values per node; one at a time in Python that costs more than
the op itself on a (4, 4) tensor. Here the small float arrays of one graph record are grouped by
shape and dtype, stacked, and summarized with a few vectorized NumPy calls per group.

The numbers equal :func:`tpx_inspect.summary.stats_row`'s bit for bit: the arrays are stacked as
columns of a C-ordered ``(elements, arrays)`` float64 matrix, and NumPy reduces axis 0 of such a
matrix row after row, i.e. in element order, as the Python loop of ``stats_row`` adds them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from tpx_inspect.records import ValueStore
from tpx_inspect.summary import _SMALL, stats_row

BATCHED = _SMALL
"""Float arrays up to this many elements are summarized together (the size up to which
``stats_row`` adds elements in order, so the batched sums are the same numbers)."""


def fill_rows(
    arrays: Sequence[np.ndarray | None], table: np.ndarray, previews: np.ndarray | None
) -> None:
    """Write the :data:`~tpx_inspect.summary.STAT_FIELDS` of ``arrays[i]`` into
    ``table[i, :8]`` and, when ``previews`` is given, its first elements into ``previews[i]``
    and their count into ``table[i, 9]``. ``None`` entries are left as they are.

    >>> a = [np.array([1.0, -1.0]), np.array([3.0, np.nan]), np.array([2.0, 0.0])]
    >>> t = np.zeros((3, 10)); fill_rows(a, t, None)
    >>> t[:, :8].tolist() == [stats_row(x)[0] for x in a]
    True
    """
    groups: dict[tuple, list[int]] = {}
    for i, a in enumerate(arrays):
        if a is None:
            continue
        t = a.dtype
        if t.kind == "f" and 0 < a.size <= BATCHED:
            key = (a.shape, t.char)
            g = groups.get(key)
            if g is None:
                groups[key] = [i]
            else:
                g.append(i)
        else:
            _one(i, a, table, previews)
    for idx in groups.values():
        if len(idx) == 1:
            _one(idx[0], arrays[idx[0]], table, previews)  # type: ignore[arg-type]
        else:
            _group(idx, [arrays[i] for i in idx], table, previews)  # type: ignore[misc]


def _one(i: int, a: np.ndarray, table: np.ndarray, previews: np.ndarray | None) -> None:
    row, head = stats_row(a, 0 if previews is None else previews.shape[1])
    table[i, :8] = row
    if previews is not None:
        previews[i, : len(head)] = head
        table[i, 9] = len(head)


def _group(
    idx: list[int], arrays: list[np.ndarray], table: np.ndarray, previews: np.ndarray | None
) -> None:
    # NOTE: one column per array, C order: axis-0 sums add the elements in order (see above)
    stacked = np.array(arrays)  # NOTE: one shape and dtype: a stack, made in C
    m = stacked.size // len(arrays)
    cols = np.ascontiguousarray(stacked.reshape(len(arrays), m).T, dtype=np.float64)
    finite = np.isfinite(cols)
    stats = np.empty((len(idx), 8))
    if finite.all():
        n: np.ndarray | float = float(m)
        vals = cols
        stats[:, 0], stats[:, 1] = cols.min(0), cols.max(0)
        stats[:, 5:7] = 0.0
    else:
        n = finite.sum(0).astype(np.float64)
        vals = np.where(finite, cols, 0.0)
        stats[:, 0] = np.where(finite, cols, math.inf).min(0)
        stats[:, 1] = np.where(finite, cols, -math.inf).max(0)
        nan = np.isnan(cols).sum(0)
        stats[:, 5], stats[:, 6] = nan, m - n - nan
    total, sq = vals.sum(0), (vals * vals).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        # NOTE: the std's second pass, as summary._small_row's (a non-finite element adds 0)
        d = cols - mean
        if vals is not cols:
            d = np.where(finite, d, 0.0)
        var = (d * d).sum(0) / n
        stats[:, 2], stats[:, 3] = mean, np.where(np.isfinite(mean), np.sqrt(var), math.nan)
    stats[:, 4], stats[:, 7] = np.sqrt(sq), (cols == 0).sum(0)
    if not isinstance(n, float):  # no finite element: statistics are None (NaN)
        stats[n == 0, :5] = math.nan
    rows = np.asarray(idx)
    table[rows, :8] = stats
    if previews is not None:
        k = min(previews.shape[1], m)
        previews[rows, :k] = cols[:k].T
        table[rows, 9] = k


class BatchStore(ValueStore):
    """A :class:`~tpx_inspect.records.ValueStore` that copies the values of one graph record
    together: :meth:`reserve` gives a value its id now, :meth:`flush` copies every reserved
    value (one stacked copy per shape and dtype, each value a read-only view of it);
    :meth:`adopt` keeps an array that is already a private copy without copying it again.

    >>> s = BatchStore(); a = np.arange(3.0)
    >>> s.reserve(a), s.reserve(a + 1), s.adopt(np.ones(2))
    (0, 1, 2)
    >>> s.flush(); a[0] = 9.0
    >>> s.get(0).tolist(), s.get(1).tolist(), s.get(1).flags.writeable
    ([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], False)
    """

    def __init__(self, arrays: list[np.ndarray] | None = None) -> None:
        super().__init__(arrays)
        self._later: list[int] = []
        self._unsealed: list[np.ndarray] = []

    def adopt(self, a: np.ndarray) -> int:
        """Keep ``a`` itself (the caller's private copy, made read-only here)."""
        a.flags.writeable = False
        self._arrays.append(a)
        return len(self._arrays) - 1

    def reserve(self, a: np.ndarray) -> int:
        """The id that a copy of ``a`` gets at the next :meth:`flush`."""
        self._arrays.append(a)
        self._later.append(len(self._arrays) - 1)
        return len(self._arrays) - 1

    def extend(self, arrays: list[np.ndarray], later: list[int], own: list[np.ndarray]) -> None:
        """Keep ``arrays`` (ids from ``len(self)`` on, in order); those whose ids are in
        ``later`` are copied at the next :meth:`flush`, the others are kept as they are: the
        caller's private copies (listed again in ``own``), made read-only before any of the
        store's values is read (setting the flag costs about a small op: not done while
        capturing)."""
        self._arrays.extend(arrays)
        self._later.extend(later)
        self._unsealed.extend(own)

    def get(self, i: int) -> np.ndarray:
        """The value with id ``i`` (read-only)."""
        if self._unsealed:
            self._seal()
        return self._arrays[i]

    def __iter__(self) -> Iterator[np.ndarray]:
        if self._unsealed:
            self._seal()
        return iter(self._arrays)

    def _seal(self) -> None:
        for a in self._unsealed:
            a.flags.writeable = False
        self._unsealed = []

    def flush(self) -> None:
        """Copy every reserved value now."""
        groups: dict[tuple, list[int]] = {}
        for i in self._later:
            a = self._arrays[i]
            if a.dtype.kind in "fiubc":
                groups.setdefault((a.shape, a.dtype.char), []).append(i)
            else:
                self._arrays[i] = _frozen_copy(a)
        self._later = []
        for ids in groups.values():
            stack = np.array([self._arrays[i] for i in ids])
            stack.flags.writeable = False
            for i, view in zip(ids, views(stack)):
                self._arrays[i] = view


def views(block: np.ndarray) -> list[np.ndarray]:
    """Each value of ``block`` (stacked on axis 0) as an array view of it; a 0-d value too
    (iterating a 1-d block would give NumPy scalars, not arrays).

    >>> [type(v).__name__ for v in views(np.zeros(2))], views(np.zeros((2, 3)))[1].shape
    (['ndarray', 'ndarray'], (3,))
    """
    if block.ndim > 1:
        return list(block)
    return [block[k, ...] for k in range(len(block))]


def _frozen_copy(a: np.ndarray) -> np.ndarray:
    c = np.array(a, copy=True)
    c.flags.writeable = False
    return c
