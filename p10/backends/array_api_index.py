"""Gathers and scatters for the generic Array API backend, through one flat index.

The standard indexes with ints, slices, None and Ellipsis, but its integer-array indexing is
optional and leaves NumPy's rules for mixed keys undefined, and it has no scatter at all. So
an advanced key is first resolved *on the host* into the flat positions it selects,
with NumPy itself applying the key to zero-memory strided grids (:func:`flat_index`): the result
follows NumPy's rules exactly for every key. The data then moves only through standard
``take`` and ``where`` on the device. Only index arrays visit the host, never values.

>>> flat_index((2, 3), (slice(None), np.asarray([2, 0]))).tolist()
[[2, 0], [5, 3]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from p10._indexing import fill_key
from p10._ops import Op
from p10.backends.numpy_backend import KERNELS

# NOTE: each round of a scatter-add costs a pass over the whole base; past this many repeats of
# one position a CPU backend runs the NumPy spec kernel instead.
MAX_ROUNDS = 16


def flat_index(shape: tuple[int, ...], key: tuple) -> np.ndarray:
    """The C-order flat positions that ``np.empty(shape)[key]`` would read, in its shape."""
    if not shape:
        return np.zeros((), np.int64)[key]
    lin: np.ndarray | None = None
    step = 1
    for d in range(len(shape) - 1, -1, -1):
        strides = [0] * len(shape)
        strides[d] = 8
        grid = as_strided(np.arange(shape[d], dtype=np.int64), shape=shape, strides=strides)
        part = grid[key] * step
        lin = part if lin is None else lin + part
        step *= shape[d]
    assert lin is not None
    return np.asarray(lin, dtype=np.int64)


def _occurrence_rank(lin: np.ndarray) -> np.ndarray:
    """For each position of ``lin`` (flat), how many earlier entries hold the same value."""
    order = np.argsort(lin, kind="stable")
    sorted_lin = lin[order]
    starts = np.r_[True, sorted_lin[1:] != sorted_lin[:-1]] if lin.size else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(starts, np.arange(lin.size), 0))
    rank = np.empty_like(lin)
    rank[order] = np.arange(lin.size) - group_start
    return rank


def full_key(key: Any) -> tuple:
    """``key`` as a tuple ending in Ellipsis when it has none: the standard indexes every axis
    explicitly, where NumPy fills trailing ones in.

    >>> full_key(0), full_key((0, Ellipsis))
    ((0, Ellipsis), (0, Ellipsis))
    """
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        return key
    return (*key, Ellipsis)


class Indexer:
    """GETITEM / INDEX_PUT / INDEX_ADD kernels for one library (see the module docstring)."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.xp = lib.xp

    def _device_index(self, host: np.ndarray) -> Any:
        return self.lib.from_numpy(np.ascontiguousarray(host, dtype=np.int64))

    def _resolve(self, x: Any, index: tuple, key: tuple) -> np.ndarray:
        host = tuple(self.lib.host_index(i) for i in index)
        return flat_index(tuple(x.shape), fill_key(key, host))

    def _flat_values(self, base: Any, values: Any, shape: tuple[int, ...]) -> Any:
        values = self.lib.cast(values, self.lib.dtype(base))
        return self.xp.reshape(self.xp.broadcast_to(values, shape), (-1,))

    def getitem(self, x: Any, *index: Any, key: tuple) -> Any:
        if not index:
            return x[full_key(key)]
        return self.getitem_flat(x, *index, key=key)

    def getitem_flat(self, x: Any, *index: Any, key: tuple) -> Any:
        """``x[key]`` through a gather at flat positions, for any key."""
        lin = self._resolve(x, index, key)
        flat = self.xp.reshape(x, (-1,))
        out = self.xp.take(flat, self._device_index(lin.reshape(-1)), axis=0)
        return self.xp.reshape(out, lin.shape)

    def _scatter_where(self, flat: Any, vals: Any, lin: np.ndarray, add: bool) -> Any:
        """``flat`` with ``vals`` stored (or added) at the distinct positions ``lin``."""
        inv = np.full(flat.shape[0], -1, np.int64)
        inv[lin] = np.arange(lin.size)
        picked = self.xp.take(vals, self._device_index(np.maximum(inv, 0)), axis=0)
        mask = self.lib.from_numpy(inv >= 0)
        return self.xp.where(mask, flat + picked if add else picked, flat)

    def index_put(self, base: Any, values: Any, *index: Any, key: tuple) -> Any:
        lin = self._resolve(base, index, key)
        flat = self.xp.reshape(base, (-1,))
        if lin.size == 0:
            return self.xp.asarray(base, copy=True)
        vals = self._flat_values(base, values, lin.shape)
        lin = lin.reshape(-1)
        # NOTE: with repeated positions the last write wins, as NumPy's assignment does.
        last = np.zeros(flat.shape[0], np.int64)
        last[lin] = np.arange(lin.size)
        keep = last[lin] == np.arange(lin.size)
        vals = self.xp.take(vals, self._device_index(np.nonzero(keep)[0]), axis=0)
        out = self._scatter_where(flat, vals, lin[keep], add=False)
        return self.xp.reshape(out, tuple(base.shape))

    def index_add(self, base: Any, values: Any, *index: Any, key: tuple) -> Any:
        lin = self._resolve(base, index, key)
        if lin.size == 0:
            return self.xp.asarray(base, copy=True)
        vals = self._flat_values(base, values, lin.shape)
        lin = lin.reshape(-1)
        rank = _occurrence_rank(lin)
        rounds = int(rank.max()) + 1
        if rounds > MAX_ROUNDS and self.lib.cpu:
            return self._host_index_add(base, values, index, key)
        out = self.xp.reshape(base, (-1,))
        # NOTE: round r adds the r-th occurrence of every position, so each position receives
        # its values in index order: the same float sums as np.add.at.
        for r in range(rounds):
            sel = np.nonzero(rank == r)[0]
            picked = self.xp.take(vals, self._device_index(sel), axis=0)
            out = self._scatter_where(out, picked, lin[sel], add=True)
        return self.xp.reshape(out, tuple(base.shape))

    def _host_index_add(self, base: Any, values: Any, index: tuple, key: tuple) -> Any:
        to_np = self.lib.to_numpy
        host = [to_np(base), to_np(values), *[to_np(i) for i in index]]
        return self.lib.from_numpy(np.asarray(KERNELS[Op.INDEX_ADD](*host, key=key)))


def kernels(lib: Any) -> dict[Op, Callable[..., Any]]:
    """The indexing kernels of the generic backend, bound to ``lib``."""
    ix = Indexer(lib)
    return {Op.GETITEM: ix.getitem, Op.INDEX_PUT: ix.index_put, Op.INDEX_ADD: ix.index_add}
