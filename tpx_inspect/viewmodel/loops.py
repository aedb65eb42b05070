"""Loops in unscoped code: runs of the same source lines repeated, found as tandem repeats.

A graph recorded without ``tp.scope`` is still made of loops: micrograd's MLP runs the same
neuron code for every neuron of a layer, every layer for every sample. Each recorded op gets
a token (op, shape, dtype, source line); :func:`find_loops` finds the blocks of tokens that
repeat back to back, the biggest first, and the loops inside one copy of each, so that the view
model can fold them as it folds repeated scopes. Iterative, numpy per period.

>>> import numpy as np
>>> t = np.array([9, 1, 2, 1, 2, 1, 2, 1, 2, 8])
>>> [(lp.start, lp.period, lp.copies) for lp in find_loops(t, min_cover=6)]
[(1, 2, 4)]

A repeat can be read from several starting points (``a b a b a b`` is also ``b a b a``); the
one cutting fewest data edges between copies is kept, so a copy is one iteration:

>>> t = np.array([2, 1, 2, 1, 2, 1, 2])   # read from 0: three (2, 1) copies
>>> edges = (np.array([1, 3, 5]), np.array([2, 4, 6]))  # but each 2 reads the 1 before it
>>> [(lp.start, lp.period, lp.copies) for lp in find_loops(t, edges, min_cover=4)]
[(1, 2, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Loop", "find_loops"]

MAX_PERIOD = 4096
"""Longest loop body looked for (in ops)."""


@dataclass(frozen=True)
class Loop:
    """``copies`` back-to-back repeats of ``period`` tokens from ``start``; ``inner``: the
    loops found inside the first copy (offsets relative to ``start``).

    >>> Loop(0, 2, 3).end
    6
    """

    start: int
    period: int
    copies: int
    inner: tuple[Loop, ...] = ()

    @property
    def end(self) -> int:
        """One past the last token of the last copy."""
        return self.start + self.period * self.copies


def _best_repeat(seg: np.ndarray, max_period: int) -> tuple[int, int, int]:
    """``(coverage, -period, start)`` of the repeat covering most tokens (shortest period on
    ties), or coverage 0."""
    best = (0, 0, 0)
    m = len(seg)
    for p in range(1, min(m // 2, max_period) + 1):
        if (m // p) * p <= best[0]:
            break  # NOTE: no longer period can cover more than the best found
        eq = np.empty(m - p + 2, np.int8)
        eq[0] = eq[-1] = 0
        np.equal(seg[:-p], seg[p:], out=eq[1:-1].view(bool))
        d = np.diff(eq)
        starts = np.flatnonzero(d == 1)
        if not len(starts):
            continue
        lengths = np.flatnonzero(d == -1) - starts
        cover = (lengths + p) // p * p
        k = int(np.argmax(cover))
        if cover[k] >= 2 * p and (int(cover[k]), -p, 0) > best:
            best = (int(cover[k]), -p, int(starts[k]))
    return best


def _aligned(
    tokens: np.ndarray, src: np.ndarray, dst: np.ndarray, lo: int, run_end: int, p: int
) -> tuple[int, int]:
    """``(start, copies)`` of period ``p`` inside the repeat ``[lo, run_end)`` cutting the
    fewest edges between copies (then most copies, then earliest)."""
    inside = (src >= lo) & (dst < run_end)
    a, b = src[inside], dst[inside]
    best = (1 << 62, 0, lo)
    for r in range(lo, min(lo + p, run_end - 2 * p + 1)):
        k = (run_end - r) // p
        keep = (a >= r) & (b < r + k * p)
        cut = int(np.count_nonzero((a[keep] - r) // p != (b[keep] - r) // p))
        if (cut, -k, r) < best:
            best = (cut, -k, r)
    return best[2], -best[1]


def find_loops(
    tokens: np.ndarray,
    edges: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    min_cover: int = 8,
    max_period: int = MAX_PERIOD,
    depth: int = 4,
) -> list[Loop]:
    """The non-overlapping loops of ``tokens`` (biggest coverage chosen first), in order.

    ``edges`` are data edges as two arrays of token positions (``src[k] -> dst[k]``); they
    choose where each copy starts. A loop is kept when its copies cover at least ``min_cover``
    tokens; loops are looked for again left and right of each one, and inside its first copy
    down to ``depth`` levels.
    """
    tokens = np.asarray(tokens)
    src, dst = edges if edges is not None else (np.zeros(0, int), np.zeros(0, int))
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    out: list[Loop] = []
    todo = [(0, len(tokens))]
    while todo:
        lo, hi = todo.pop()
        if hi - lo < min_cover:
            continue
        cover, neg_p, s = _best_repeat(tokens[lo:hi], max_period)
        p = -neg_p
        if cover < min_cover:
            continue
        run_end = lo + s + cover + _tail(tokens, lo + s + cover, p, hi)
        start, copies = _aligned(tokens, src, dst, lo + s, run_end, p)
        if copies * p < min_cover:
            continue
        out.append(Loop(start, p, copies, _inner(tokens, src, dst, start, p, min_cover,
                                                 max_period, depth)))  # fmt: skip
        todo.append((lo, start))
        todo.append((start + copies * p, hi))
    return sorted(out, key=lambda lp: lp.start)


def _tail(tokens: np.ndarray, end: int, p: int, hi: int) -> int:
    """How many tokens after ``end`` still continue the period-``p`` repeat (< p)."""
    k = 0
    while k < p - 1 and end + k < hi and tokens[end + k] == tokens[end + k - p]:
        k += 1
    return k


def _inner(tokens, src, dst, start, p, min_cover, max_period, depth) -> tuple[Loop, ...]:
    if depth <= 1 or p < min_cover:
        return ()
    keep = (src >= start) & (dst < start + p)
    sub = (src[keep] - start, dst[keep] - start)
    found = find_loops(tokens[start : start + p], sub, min_cover=min_cover,
                       max_period=max_period, depth=depth - 1)  # fmt: skip
    return tuple(found)
