"""Creation functions of ``tpx``: the P10 ones returning ``tpx.Tensor``, with ``requires_grad``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import p10
from tpx._tensor import Tensor, wrap

_EXAMPLES = {
    "asarray": "[1.0, 2.0]",
    "tensor": "[1.0, 2.0]",
    "zeros": "(2,)",
    "ones": "(2,)",
    "empty": "(2,)",
    "full": "(2,), 1.0",
    "zeros_like": "tp.ones(2)",
    "ones_like": "tp.ones(2)",
    "empty_like": "tp.ones(2)",
    "full_like": "tp.ones(2), 1.0",
    "arange": "0.0, 2.0",
    "linspace": "0.0, 1.0, 2",
    "eye": "2",
    "rand": "(2,)",
    "randn": "(2,)",
    "normal": "0.0, 1.0, (2,)",
    "uniform": "0.0, 1.0, (2,)",
}


def _unwrap(value: Any) -> Any:
    return value._t if isinstance(value, Tensor) else value


def _creator(fn: Callable[..., p10.Tensor]) -> Callable[..., Tensor]:
    name = fn.__name__

    def create(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        t = wrap(fn(*[_unwrap(a) for a in args], **kwargs))
        if requires_grad:
            t.requires_grad_(True)
        return t

    create.__name__ = create.__qualname__ = name
    create.__doc__ = (
        f"``p10.{name}`` returning a ``tpx.Tensor``; ``requires_grad=True`` makes a leaf that "
        f"requires grad.\n\n    >>> import tpx as tp\n"
        f"    >>> tp.{name}({_EXAMPLES[name]}, requires_grad=True).requires_grad\n    True\n"
    )
    return create


asarray = _creator(p10.asarray)
tensor = _creator(p10.tensor)
zeros = _creator(p10.zeros)
ones = _creator(p10.ones)
empty = _creator(p10.empty)
full = _creator(p10.full)
zeros_like = _creator(p10.zeros_like)
ones_like = _creator(p10.ones_like)
empty_like = _creator(p10.empty_like)
full_like = _creator(p10.full_like)
arange = _creator(p10.arange)
linspace = _creator(p10.linspace)
eye = _creator(p10.eye)
rand = _creator(p10.rand)
randn = _creator(p10.randn)
normal = _creator(p10.normal)
uniform = _creator(p10.uniform)


def randint(low: int, high: int, shape: Any = (), **kwargs: Any) -> Tensor:
    """Integers in ``[low, high)`` from P10's default generator, as a ``tpx.Tensor``.

    >>> import tpx as tp
    >>> tp.randint(0, 3, (4,)).dtype
    dtype('int64')
    """
    return wrap(p10.randint(low, high, shape, **kwargs))


def from_numpy(arr: Any, *, requires_grad: bool = False) -> Tensor:
    """A ``tpx.Tensor`` sharing memory with a NumPy array.

    >>> import numpy as np, tpx as tp
    >>> tp.from_numpy(np.ones(2)).dtype
    dtype('float64')
    """
    t = wrap(p10.from_numpy(arr))
    return t.requires_grad_(True) if requires_grad else t


def from_dlpack(x: Any, *, requires_grad: bool = False) -> Tensor:
    """A ``tpx.Tensor`` sharing memory with a DLPack-capable object.

    >>> import numpy as np, tpx as tp
    >>> tp.from_dlpack(np.ones(2)).shape
    (2,)
    """
    t = wrap(p10.from_dlpack(x))
    return t.requires_grad_(True) if requires_grad else t
