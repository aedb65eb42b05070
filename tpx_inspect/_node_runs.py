"""Node columns stored as runs of equal entries (trace format 2).

Most columns of a node table repeat one value over long stretches of nodes (a 100,000-node
chain has 3 kinds, 3 ops, 1 scope, 2 shapes, 1 dtype): format 2 stores each such column (the
fields of :class:`~tpx_inspect.nodes.Node` declared ``column(runs=True)``) as ``{"values":
[...], "counts": [...]}``, entry ``i`` of ``values`` repeated ``counts[i]`` times. The JSON
holds a few objects where it held one per node: the 100,000-node benchmark trace's JSON is
about 40% smaller and parses about a third faster.

>>> to_runs(["leaf", "op", "op", "op", "loss"])
{'values': ['leaf', 'op', 'loss'], 'counts': [1, 3, 1]}
>>> from_runs(['leaf', 'op', 'loss'], [1, 3, 1], 5, "kind")
['leaf', 'op', 'op', 'op', 'loss']
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress, repeat
from operator import is_not, ne
from typing import Any

import numpy as np

from tpx_inspect import _json
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.nodes import NODE_COLUMNS_DECLARED

__all__ = ["RUN_FIELDS", "from_runs", "to_runs"]

RUN_FIELDS = tuple(f.name for f in NODE_COLUMNS_DECLARED if f.metadata["column"][4])
"""The node columns stored as runs from format 2 on."""

_EXACT = (frozenset({str, type(None)}), frozenset({int, type(None)}))
"""Kinds of columns whose ``==`` is JSON equality (``1 == True == 1.0`` in Python, not in
JSON: other columns, such as ``params``, are compared by their JSON text)."""

_PLAIN = frozenset({str, int, type(None)})
"""Kinds of the items of lists or dicts that compare as JSON does (no bool, float, or deeper
container among them)."""


def to_runs(column: Sequence[Any] | np.ndarray) -> dict[str, list]:
    """The runs of a node column (a list, or a NumPy array of its entries): each entry
    equal to the one before (as JSON) joins its run.

    >>> to_runs([{"dim": 1}, {"dim": 1}, {"dim": True}])["counts"]
    [2, 1]
    >>> to_runs(np.array(["float32", "float32"]))
    {'values': ['float32'], 'counts': [2]}
    """
    entries = column.tolist() if isinstance(column, np.ndarray) else column
    entries = entries if type(entries) is list else list(entries)  # NOTE: not copied
    n = len(entries)
    starts = _gallop(entries, n)
    if starts is not None:
        counts = [b - a for a, b in zip(starts, [*starts[1:], n])]
        return {"values": list(map(entries.__getitem__, starts)), "counts": counts}
    # NOTE: a capture's nodes share their strings, shapes, ... (one object per template): the
    # runs of one object are found by identity, and only where the object changes are two
    # entries compared (as JSON); a column of distinct objects (a loaded trace's params) is
    # compared entry by entry, at C speed
    objects = [0, *compress(range(1, n), map(is_not, entries[1:], entries))] if n else []
    if len(objects) <= n // 16:
        starts = [i for i in objects if not i or not _same(entries[i - 1], entries[i])]
    else:
        starts = _heads(entries)
        if not _exact(entries, frozenset(map(type, entries))) and not _same_json(entries, starts):
            starts = _heads(_json_keys(entries))  # NOTE: a run held 1 and 1.0, True and 1
    counts = [b - a for a, b in zip(starts, [*starts[1:], n])]
    return {"values": list(map(entries.__getitem__, starts)), "counts": counts}


def _gallop(entries: list, n: int) -> list[int] | None:
    """Where each run starts, when every run's first entry is a string or None (for them
    ``==`` is JSON equality: what equals a str is a str) and the runs are few: each run's end
    found by comparing whole stretches of the column with its first entry repeated, at C
    speed (~1 ms for a 100,000-node run instead of a pass over every entry); None when a run
    starts with another kind of entry or the runs are many (the caller's passes then)."""
    starts: list[int] = []
    i = 0
    while i < n:
        head = entries[i]
        if (type(head) is not str and head is not None) or len(starts) > n >> 8:
            return None
        starts.append(i)
        i = _run_end(entries, i + 1, head)
    return starts


def _run_end(entries: list, lo: int, head: Any) -> int:
    """The end of the run of ``head`` whose entries before ``lo`` are all ``head``: stretches
    twice as long each time, then the last one halved until the first other entry is found."""
    n, step = len(entries), 1
    while lo < n:
        hi = min(lo + step, n)
        if entries[lo:hi] != [head] * (hi - lo):
            break
        lo, step = hi, step * 2
    else:
        return n
    while hi - lo > 1:  # NOTE: entries[lo:hi] holds another entry; [..lo) are all head
        mid = (lo + hi) // 2
        if entries[lo:mid] == [head] * (mid - lo):
            lo = mid
        else:
            hi = mid
    return lo


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON value."""
    return a == b and (type(a) is type(b) is str or _json.dumps(a) == _json.dumps(b))


def _heads(keys: list) -> list[int]:
    """Where each run of equal (``==``) keys starts (C-speed passes, no Python loop)."""
    if not keys:
        return []
    return [0, *compress(range(1, len(keys)), map(ne, keys[1:], keys))]


def _exact(entries: list, kinds: frozenset) -> bool:
    """Whether ``==`` between the entries is JSON equality: strings or None, ints or None, or
    lists (dicts) whose items (values) are strings, ints and None: no ``1 == 1.0 == True``
    (one C-speed pass over the items: a chain's 100,000 shapes and params)."""
    if any(kinds <= exact for exact in _EXACT):
        return True
    if kinds == {dict}:
        return frozenset(map(type, chain.from_iterable(map(dict.values, entries)))) <= _PLAIN
    if kinds == {list}:
        return frozenset(map(type, chain.from_iterable(entries))) <= _PLAIN
    return False


def _same_json(entries: list, starts: list[int]) -> bool:
    """Whether every run is written as its first entry repeated (``==`` also holds between
    ``1``, ``1.0`` and ``True``, or ``0.0`` and ``-0.0``, which JSON tells apart): each run
    of more than one entry written once as it is and once as its head repeated (C speed)."""
    bounds = zip(starts, [*starts[1:], len(entries)])
    return all(
        b - a == 1 or _json.dumps(entries[a:b]) == _json.dumps([entries[a]] * (b - a))
        for a, b in bounds
    )


def _json_keys(entries: list) -> list:
    """Each entry's JSON text, made once per distinct object."""
    objects = dict(zip(map(id, entries), entries))
    text = dict(zip(objects, map(_json.dumps, objects.values())))
    return list(map(text.__getitem__, map(id, entries)))


def from_runs(values: list, counts: list[int], n: int, name: str) -> list:
    """The column of ``n`` entries that the runs ``values`` x ``counts`` stand for. The
    counts (whole numbers >= 1, which the schema checked) must add up to ``n`` before
    anything is made: a file cannot make this allocate more than its node count."""
    if len(values) != len(counts):
        raise TraceFormatError(
            f"node column {name!r}: {len(values)} values for {len(counts)} counts"
        )
    total = sum(counts)
    if total != n:
        raise TraceFormatError(
            f"node column {name!r}: its runs cover {total} nodes, the structure has {n}"
        )
    if len(counts) * 8 > n:  # NOTE: short runs: one C-speed pass over them all
        return list(chain.from_iterable(map(repeat, values, counts)))
    out: list = []
    for v, c in zip(values, counts):  # NOTE: long runs: each filled by list repetition (5x
        out += [v] * c  # faster than an iterator of 100,000 entries)
    return out
