"""Normalization of ``x[key]`` into an op parameter: tensors inside the key become input slots."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class IndexSlot:
    """Stands in a GETITEM/INDEX_* key for the ``position``-th index tensor input.

    >>> IndexSlot(0)
    IndexSlot(position=0)
    """

    position: int


def fill_key(key: tuple, index_arrays: tuple) -> tuple:
    """Replace the :class:`IndexSlot` markers of ``key`` by the arrays they stand for.

    >>> fill_key((slice(None), IndexSlot(0)), ("idx",))
    (slice(None, None, None), 'idx')
    """
    if not index_arrays:
        return key
    return tuple(index_arrays[k.position] if type(k) is IndexSlot else k for k in key)


def is_basic(key: tuple) -> bool:
    """True when ``key`` holds only ints, slices, None and Ellipsis (a view in NumPy).

    >>> is_basic((0, slice(1, 2), None)), is_basic((IndexSlot(0),))
    (True, False)
    """
    return all(k.__class__ is not IndexSlot for k in key)


def key_to_json(key: tuple) -> list[Any]:
    """A JSON-friendly form of a normalized key, for traces and labels.

    >>> key_to_json((1, slice(None, 2, None), None, Ellipsis, IndexSlot(0)))
    [1, {'slice': [None, 2, None]}, None, '...', {'tensor': 0}]
    """
    out: list[Any] = []
    for k in key:
        if type(k) is slice:
            out.append({"slice": [k.start, k.stop, k.step]})
        elif k is Ellipsis:
            out.append("...")
        elif type(k) is IndexSlot:
            out.append({"tensor": k.position})
        else:
            out.append(k)
    return out


def key_to_str(key: tuple) -> str:
    """The key as a user would write it between brackets.

    >>> key_to_str((1, slice(None, 2, None), None, Ellipsis, IndexSlot(0)))
    '1, :2, None, ..., t0'
    """
    parts = []
    for k in key:
        if type(k) is slice:
            s = "" if k.start is None else str(k.start)
            s += ":" + ("" if k.stop is None else str(k.stop))
            if k.step is not None:
                s += ":" + str(k.step)
            parts.append(s)
        elif k is Ellipsis:
            parts.append("...")
        elif type(k) is IndexSlot:
            parts.append(f"t{k.position}")
        else:
            parts.append(repr(k))
    return ", ".join(parts)
