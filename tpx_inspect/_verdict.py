"""The per-step NaN/Inf verdict of the ``nonfinite`` policy: is a step that the policy would
not keep free of NaN/Inf (then nothing of it is built)?

A NaN/Inf in a rule's output reaches the incoming gradient of its target, so the incoming
gradients and the roots' values cover the graph; intermediate forward values are not checked
(masked -inf, as in attention, is not a failure).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tpx import observe
from tpx_inspect._lazy import is_lazy, lazy_record
from tpx_inspect._pending import OUT, RAW, snapshot_array
from tpx_inspect.summary import is_finite

native, natives, ndarray = observe.native, observe.natives, np.ndarray


def step_finite(b: Any, pending: Any, builder: Any) -> bool:
    """Whether backward ``b`` (a ``_backward_records.BackwardRecords``) saw no NaN/Inf in a
    gradient or a root's value; ``pending`` maps nodes to their pending records (see
    ``_pending``)."""
    values = b.grad_outputs()  # NOTE: the waiting batch's as P10 tensors (not taken in)
    arrays = natives(values)
    # NOTE: a NumPy array is not lazy (is_lazy not asked)
    if (not arrays or arrays[0].__class__ is not ndarray) and (
        is_lazy(values[0]) if values else lazy_record(list(b.roots), pending, None)
    ):
        b.settle()  # NOTE: the prefetch reads the records as the build will
        return _lazy_finite(b, pending, builder)
    with np.errstate(over="ignore", invalid="ignore"):  # see finite_floats
        for node in b.roots:
            p = pending.get(node)
            if p is None:
                continue
            if p[OUT] is None:  # NOTE: a live value: tested with the gradients
                values.append(p[RAW])
                arrays.append(native(p[RAW]))
            elif not _value_finite(p, node):
                return False
        return _grads_finite(values, arrays)


def _grads_finite(grads: list, arrays: list | None = None) -> bool:
    """Whether the values ``grads`` (the incoming gradients of the nodes that ran, and the
    roots' values; ``arrays``: their :func:`~tpx.observe.natives`) are free of NaN/Inf."""
    seen: set[int] = set()
    big: list[np.ndarray] = []
    small: list[np.ndarray] = []
    for g, a in zip(grads, natives(grads) if arrays is None else arrays):
        if a.__class__ is not ndarray:
            if id(g) not in seen:
                seen.add(id(g))
                if not is_finite(g):
                    return False
            continue
        # NOTE: each memory tested once: a gradient passed on unchanged (add's rule) reaches
        # several nodes, and a leaf's gradient may be a transposed view of the whole of its
        # producer's (all are held by the capture: their ids are distinct)
        key = id(a) if a.base is None else _memory(a)  # NOTE: most own their memory
        if key in seen:
            continue
        seen.add(key)
        if a.dtype.kind == "f":
            if a.size > _JOINED:
                big.append(a.ravel("K"))  # NOTE: a view, also of a transposed gradient
            else:
                small.append(a)
    return _floats_finite(big, small)


_JOINED = 4096
"""Float gradients up to this many elements are joined into one array for one dot."""


def _floats_finite(flats: list[np.ndarray], small: list[np.ndarray]) -> bool:
    """Whether the 1-d float arrays ``flats`` and the float arrays ``small`` hold no NaN/Inf:
    yes when the sum of all their squares is finite (finite_floats' test, with one dot for
    all of ``small`` joined: a call costs more than their elements), else each is tested
    exactly.

    >>> with np.errstate(over="ignore"):
    ...     _floats_finite([np.full(5000, 3e38, np.float32)], [np.ones((2, 3)).T])
    True
    >>> _floats_finite([np.ones(5000)], [np.ones(3), np.array([[np.nan]], np.float32)])
    False
    """
    total = 0.0
    for f in flats:
        total += float(f.dot(f))
    if small:
        joined = np.concatenate(small, axis=None) if len(small) > 1 else small[0].ravel("K")
        total += float(joined.dot(joined))
    return math.isfinite(total) or all(bool(np.isfinite(f).all()) for f in flats + small)


def _memory(a: np.ndarray) -> int:
    """``id`` of the array whose elements ``a`` holds: its base when ``a`` is a contiguous
    view of the whole of it with the same dtype (e.g. a transposed gradient), else ``a``."""
    base = a.base
    # NOTE: the cheap tests first (a view of part of its base fails at nbytes); ``forc``:
    # contiguous in C or Fortran order (one flags object per array)
    if (
        base.__class__ is np.ndarray
        and a.nbytes == base.nbytes
        and base.base is None  # NOTE: owns its memory: no other offset
        and a.dtype == base.dtype
        and a.flags.forc
        and base.flags.forc
    ):
        return id(base)
    return id(a)


def _value_finite(p: tuple, node: Any) -> bool:
    out = p[OUT]
    if out.__class__ is bytes:  # a small float output kept as its bytes
        return finite_floats(snapshot_array(out, node.out_meta))
    if out.__class__ is np.ndarray:  # a copy made at forward
        return finite_floats(out) if out.dtype.kind == "f" else is_finite(out)
    if out is not None:  # summarized at forward: NaN and Inf counts
        return not (out.row[5] or out.row[6])
    return is_finite(p[RAW])


def _lazy_finite(b: Any, pending: Any, builder: Any) -> bool:
    """The verdict from the summaries of the whole record, made in one compute (which
    building the record then reuses)."""
    rows = builder.prefetch(b.order, pending, b)
    checked = b.grad_outputs()
    checked += [p[RAW] for p in map(pending.get, b.roots) if p is not None]
    finite = all(not (f.row[5] or f.row[6]) for f in map(rows.get, map(id, checked)) if f)
    if finite:
        builder.prefetched = {}  # the step is not kept
    return finite


def finite_floats(a: np.ndarray) -> bool:
    """Whether a float array holds no NaN/Inf. A finite ``a . a`` (a sum of squares, none
    negative) proves it in one BLAS pass, about twice as fast as ``isfinite(a).all()``; a
    non-finite one (a NaN, an Inf, or squares past the float's range) is checked exactly.

    >>> with np.errstate(over="ignore"):  # the squares of 3e38 overflow float32
    ...     finite_floats(np.ones(3)), finite_floats(np.array([1.0, np.nan])), finite_floats(
    ...         np.array([3e38, 1.0], np.float32))
    (True, False, True)
    """
    flat = a.ravel("K")  # NOTE: a view of a transposed gradient too (reshape(-1) copies it)
    return math.isfinite(flat.dot(flat)) or bool(np.isfinite(a).all())
