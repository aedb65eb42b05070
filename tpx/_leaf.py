"""What backward does where a gradient leaves the graph: into a leaf's ``.grad`` (taking over
a gradient that nothing else holds, under a lock), and into tensor hooks and ``retain_grad``."""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

import p10
from tpx._graph import AccumulateGrad, Node
from tpx._mode import state
from tpx._tensor import Tensor, wrap


def pre_hooks(node: Node, g: Any) -> Any:
    hooks = node.tensor_hooks
    if hooks is None and node.__class__ is AccumulateGrad and node.variable._rare_attrs:
        hooks = node.variable._rare_attrs.get("hooks")
    for fn in hooks or ():
        out = fn(g if g.__class__ is Tensor else wrap(g))
        if out is not None:
            g = out if state.grad_enabled else (out._value if isinstance(out, Tensor) else out)
    for fn in node._pre_hooks or ():
        out = fn(node, g)
        if out is not None:
            g = out
    retain = node.retain
    if retain is not None:
        t = retain()
        if t is not None:
            with _LEAF_LOCKS[(id(t) >> 4) & 63]:  # a read-modify-write, as a leaf's
                t._grad = _sum_grad(t._grad, g)
    return g


def _sum_grad(prev: Any, g: Any) -> Any:
    if prev is not None:
        return prev + (g if g.__class__ is Tensor else wrap(g))
    return g if g.__class__ is Tensor else _owned(g)


def _owned(g: p10.Tensor) -> Tensor:
    # NOTE: a gradient may be the caller's `gradient=` or be shared with other leaves (the rule
    # of add returns one value for both inputs), or be a read-only broadcast view; a `.grad`
    # gets its own memory, so that `x.grad.mul_(0.5)` or `x.grad += ...` touch only it.
    return wrap(p10.asarray(g, copy=True))


def _holders(g: p10.Tensor) -> tuple[bool, int, int]:
    """Whether ``g`` owns writable NumPy memory, and the reference counts of ``g`` and of it."""
    arr = g._data
    owns = arr.__class__ is np.ndarray and arr.base is None and arr.flags.writeable
    return owns and g._vc is None, sys.getrefcount(g), sys.getrefcount(arr)


def _sole_holders() -> tuple[bool, int, int]:
    """What _unshared sees for a gradient that only _run's `g` holds, measured through the same
    depth of calls rather than written down: interpreters that borrow references count fewer."""

    def accumulate_leaf(g: p10.Tensor) -> tuple[bool, int, int]:
        return unshared(g)

    def unshared(g: p10.Tensor) -> tuple[bool, int, int]:
        return _holders(g)

    g = p10.zeros(1)
    return accumulate_leaf(g)


_SOLE_HOLDERS = _sole_holders()


def _unshared(g: p10.Tensor) -> bool:
    """True when nothing but the engine holds ``g`` and its memory: the leaf then takes it as
    its ``.grad`` without a copy, as PyTorch's AccumulateGrad steals a gradient whose use count
    is 1. Anything else (the caller's `gradient=`, a view, a value that a rule also gave to
    another leaf, that a hook kept or that a Function saved) is copied by the caller."""
    return _holders(g) == _SOLE_HOLDERS


# NOTE: `.grad` is a read-modify-write: threads doing backward into one leaf would lose each
# other's updates. A leaf takes one of these locks by its id (striped: no lock to create per
# leaf, and leaves rarely share one); hooks run outside it, as they may run backward themselves.
_LEAF_LOCKS = tuple(threading.Lock() for _ in range(64))


def accumulate_leaf(node: AccumulateGrad, g: Any, create_graph: bool) -> None:
    leaf = node.variable
    with _LEAF_LOCKS[(id(leaf) >> 4) & 63]:
        prev = leaf._grad
        if prev is None:
            if g.__class__ is Tensor:
                leaf._grad = g if create_graph else _owned(g._value)
            else:
                leaf._grad = wrap(g) if _unshared(g) else _owned(g)
        else:
            leaf._grad = prev + (g if g.__class__ is Tensor else wrap(g))
        prev = None
    for fn in node._hooks or ():
        fn(node, (), g)
