"""The program's memory that a waiting (deferred) step's gradients may share: copied at the
backward's end, compared at the build, and put back where the program wrote into it.

A gradient the capture keeps may be an array the program can reach and write in place after
its backward: the ``gradient=`` given to ``backward`` (a rule may pass it on unchanged, or as
a view: ``sum``'s broadcast). A leaf's or a retained ``.grad`` never is: TPX copies a gradient
into ``.grad`` unless the engine alone holds it (``tpx._leaf._unshared``), and the capture
holds every one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ndarray = np.ndarray


def watch_user_memory(b: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """A copy of each memory block the program can write into and ``b``'s gradients may
    share (the root gradients given to backward), by the array that owns the memory. See
    :func:`repair_user_memory`."""
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    seen: set[int] = set()
    for a in b.root_grads.values():
        base = _base(a) if a.__class__ is ndarray else None
        if base.__class__ is ndarray and id(base) not in seen:
            seen.add(id(base))
            pairs.append((base, base.copy(order="K")))
    return pairs


def repair_user_memory(b: Any, pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Put back, in ``b``'s gradients, what the program wrote since :func:`watch_user_memory`
    into memory they share: every held array whose memory changed is replaced by the same view
    of the copy (one per object: the build tells values apart by identity)."""
    changed = {id(m): c for m, c in pairs if m.tobytes(order="A") != c.tobytes(order="A")}
    if not changed:
        return
    copies: dict[int, Any] = {}
    b.root_grads = {n: _fixed([g], changed, copies)[0] for n, g in b.root_grads.items()}
    ex, accs = b.executed, b.accs
    ex[1::6] = _fixed(ex[1::6], changed, copies)
    b.gins[:] = _fixed(b.gins, changed, copies)
    accs[1::4], accs[2::4] = (
        _fixed(accs[1::4], changed, copies),
        _fixed(accs[2::4], changed, copies),
    )


def _fixed(xs: list, changed: dict[int, np.ndarray], copies: dict[int, Any]) -> list:
    """``xs`` with each array whose memory is in ``changed`` (by its owner's id) as the same
    view of the owner's copy."""
    out = list(xs)
    for i, x in enumerate(out):
        if x.__class__ is not ndarray:
            continue
        base = _base(x)
        copy = changed.get(id(base))
        if copy is None:
            continue
        c = copies.get(id(x))
        if c is None:
            offset = x.ctypes.data - base.ctypes.data
            c = np.ndarray(x.shape, x.dtype, buffer=copy, offset=offset, strides=x.strides)
            c.flags.writeable = False
            copies[id(x)] = c
        out[i] = c
    return out


def _base(a: np.ndarray) -> Any:
    """The object that owns ``a``'s memory (``a`` itself when it owns it)."""
    while isinstance(a, ndarray) and a.base is not None:
        a = a.base
    return a
