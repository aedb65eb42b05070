"""Creation functions of ``tpx``: the P10 ones returning ``tpx.Tensor``, with ``requires_grad``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import p10
from tpx._device import device_arg
from tpx._tensor import Tensor, wrap
from tpx._torch import shape_of

_EXAMPLES = {
    "asarray": "[1.0, 2.0]",
    "tensor": "[1.0, 2.0]",
    "zeros": "2, 3",
    "ones": "(2,)",
    "empty": "2",
    "full": "(2,), 1.0",
    "zeros_like": "tp.ones(2)",
    "ones_like": "tp.ones(2)",
    "empty_like": "tp.ones(2)",
    "full_like": "tp.ones(2), 1.0",
    "arange": "0.0, 2.0",
    "linspace": "0.0, 1.0, 2",
    "eye": "2",
    "rand": "2, 2",
    "randn": "(2,)",
    "normal": "0.0, 1.0, (2,)",
    "uniform": "0.0, 1.0, (2,)",
}


def _unwrap(value: Any) -> Any:
    return value._value if isinstance(value, Tensor) else value


def _prepare(fn: str, kwargs: dict) -> dict:
    """Drop PyTorch-only keywords that change nothing here; translate ``device``."""
    kwargs.pop("pin_memory", None)
    kwargs.pop("layout", None)
    if "device" in kwargs:
        dev = device_arg(kwargs.pop("device"), fn)
        if dev is not None:
            kwargs["device"] = dev
    return kwargs


def _creator(fn: Callable[..., p10.Tensor], shaped: bool = False) -> Callable[..., Tensor]:
    name = fn.__name__

    def create(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        kwargs = _prepare(name, kwargs)
        if shaped:  # zeros(2, 3), zeros((2, 3)), zeros(size=(2, 3)), as PyTorch
            size = kwargs.pop("size", None)
            args = (shape_of(args, name) if size is None else tuple(size),)
            gen = kwargs.pop("generator", None)
            if gen is not None:  # rand/randn with their own generator
                fn_ = getattr(gen, name)
                t = wrap(fn_(*args, **kwargs))
                return t.requires_grad_(True) if requires_grad else t
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
zeros = _creator(p10.zeros, shaped=True)
ones = _creator(p10.ones, shaped=True)
empty = _creator(p10.empty, shaped=True)
full = _creator(p10.full)
zeros_like = _creator(p10.zeros_like)
ones_like = _creator(p10.ones_like)
empty_like = _creator(p10.empty_like)
full_like = _creator(p10.full_like)
arange = _creator(p10.arange)
linspace = _creator(p10.linspace)
eye = _creator(p10.eye)
rand = _creator(p10.rand, shaped=True)
randn = _creator(p10.randn, shaped=True)
normal = _creator(p10.normal)
uniform = _creator(p10.uniform)


def randint(low: int, high: Any = None, size: Any = (), *, generator: Any = None,
            **kwargs: Any) -> Tensor:  # fmt: skip
    """Integers in ``[low, high)``; ``randint(high, size)`` draws from ``[0, high)``, as
    PyTorch. From P10's default generator, or from ``generator``.

    >>> import tpx as tp
    >>> tp.randint(0, 3, (4,)).dtype, tp.randint(5, (2, 2)).shape
    (dtype('int64'), (2, 2))
    """
    if isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    kwargs = _prepare("randint", kwargs)
    src = p10 if generator is None else generator
    return wrap(src.randint(low, high, tuple(size), **kwargs))


def rand_like(x: Any, *, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """Uniform values in ``[0, 1)`` with the shape of ``x`` (and its dtype unless given).

    >>> import tpx as tp
    >>> tp.rand_like(tp.zeros(2, 3)).shape
    (2, 3)
    """
    return rand(tuple(x.shape), dtype=dtype or x.dtype, requires_grad=requires_grad, **kwargs)


def randn_like(x: Any, *, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """Standard normal values with the shape of ``x`` (and its dtype unless given).

    >>> import tpx as tp
    >>> tp.randn_like(tp.zeros(2, dtype=tp.float64)).dtype
    dtype('float64')
    """
    return randn(tuple(x.shape), dtype=dtype or x.dtype, requires_grad=requires_grad, **kwargs)


def randperm(n: int, *, generator: Any = None, dtype: Any = "int64", **kwargs: Any) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64), from P10's default generator or from
    ``generator``.

    >>> import tpx as tp
    >>> sorted(tp.randperm(4, generator=tp.Generator().manual_seed(0)).tolist())
    [0, 1, 2, 3]
    """
    kwargs = _prepare("randperm", kwargs)
    gen = generator if generator is not None else p10.random.default_generator
    out = wrap(gen.permutation(int(n), **kwargs))
    return out if dtype in ("int64", p10.int64) else out.to(dtype)


def multinomial(input: Any, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:  # fmt: skip
    """Indices drawn from the categorical distribution of each row of ``input`` (weights, not
    necessarily normalized), with or without replacement; int64, no gradient.

    >>> import tpx as tp
    >>> g = tp.Generator().manual_seed(0)
    >>> tp.multinomial(tp.asarray([0.0, 1.0, 0.0]), 2, replacement=True, generator=g).tolist()
    [1, 1]
    """
    w = np.asarray(input, dtype=np.float64)
    if w.ndim not in (1, 2):
        raise p10.ShapeError(f"multinomial: expects a 1-D or 2-D tensor, got shape {w.shape}")
    if (w < 0).any() or not np.isfinite(w).all():
        raise p10.ArgumentError("multinomial: weights must be finite and non-negative")
    rows = w.reshape(-1, w.shape[-1])
    if (rows.sum(axis=1) <= 0).any():
        raise p10.ArgumentError("multinomial: every row needs a positive total weight")
    if not replacement and num_samples > int((rows > 0).sum(axis=1).min()):
        raise p10.ArgumentError(
            f"multinomial: cannot draw {num_samples} samples without replacement from a row "
            "with fewer non-zero weights; pass replacement=True"
        )
    gen = generator if generator is not None else p10.random.default_generator
    rng = gen._rng  # NOTE: one stream per generator, as the other random functions
    picks = [rng.choice(len(r), num_samples, replace=replacement, p=r / r.sum()) for r in rows]
    out = np.asarray(picks, dtype=np.int64).reshape(*w.shape[:-1], num_samples)
    return wrap(p10.asarray(out))


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


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a ``tpx.Tensor``.

    >>> import tpx as tp
    >>> tp.is_tensor(tp.zeros(1)), tp.is_tensor([1.0])
    (True, False)
    """
    return isinstance(x, Tensor)
