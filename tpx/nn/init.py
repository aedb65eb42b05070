"""In-place initialisers, as ``torch.nn.init``: they fill a tensor under ``tp.no_grad()``.

Random values come from ``generator`` (a :class:`p10.random.Generator`) or, when it is None,
from P10's default generator, which ``p10.manual_seed`` / ``tp.manual_seed`` seed.
"""

from __future__ import annotations

import math
from typing import Any

import p10
import p10.random
import tpx as tp

Generator = p10.random.Generator


def _gen(generator: Generator | None) -> Generator:
    return p10.random.default_generator if generator is None else generator


def _fill(t: tp.Tensor, values: Any) -> tp.Tensor:
    with tp.no_grad():
        t.copy_(values)
    return t


def calculate_fan_in_and_fan_out(shape: tuple[int, ...]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight: ``(in, out)`` of Linear, ``in*kh*kw`` of a conv.

    >>> calculate_fan_in_and_fan_out((16, 3, 5, 5))
    (75, 400)
    """
    if len(shape) < 2:
        raise ValueError(f"fan in and fan out need a tensor of 2 or more dims, got {shape}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain of a nonlinearity (PyTorch's table).

    >>> round(calculate_gain("leaky_relu", math.sqrt(5)), 4)
    0.5774
    """
    if nonlinearity in ("linear", "conv2d", "sigmoid", "identity"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}")


def uniform_(
    t: tp.Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None
) -> tp.Tensor:
    """Fill ``t`` with values drawn uniformly from ``[a, b)``.

    >>> import tpx as tp
    >>> w = uniform_(tp.zeros(100), -1.0, 1.0)
    >>> bool((w.abs() <= 1.0).all())
    True
    """
    return _fill(t, _gen(generator).uniform(a, b, t.shape, dtype=t.dtype))


def normal_(
    t: tp.Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None
) -> tp.Tensor:
    """Fill ``t`` with normal values.

    >>> import tpx as tp
    >>> normal_(tp.zeros(3), generator=p10.random.Generator(0)).shape
    (3,)
    """
    return _fill(t, _gen(generator).normal(mean, std, t.shape, dtype=t.dtype))


def constant_(t: tp.Tensor, value: float) -> tp.Tensor:
    """Fill ``t`` with ``value``.

    >>> import tpx as tp
    >>> constant_(tp.zeros(2), 3.0).tolist()
    [3.0, 3.0]
    """
    return _fill(t, p10.full(t.shape, value, dtype=t.dtype))


def zeros_(t: tp.Tensor) -> tp.Tensor:
    """Fill ``t`` with zeros."""
    return constant_(t, 0.0)


def ones_(t: tp.Tensor) -> tp.Tensor:
    """Fill ``t`` with ones."""
    return constant_(t, 1.0)


def _fan(shape: tuple[int, ...], mode: str) -> int:
    fan_in, fan_out = calculate_fan_in_and_fan_out(shape)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    return fan_in if mode == "fan_in" else fan_out


def kaiming_uniform_(
    t: tp.Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> tp.Tensor:
    """He uniform init: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``. Linear and Conv2d use
    ``a=sqrt(5)``, which gives ``b = 1 / sqrt(fan_in)`` (PyTorch's default).

    >>> import tpx as tp
    >>> w = kaiming_uniform_(tp.zeros((10, 25)), a=math.sqrt(5))
    >>> bool((w.abs() <= 0.2).all())
    True
    """
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _fan(t.shape, mode))
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(
    t: tp.Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> tp.Tensor:
    """He normal init: ``N(0, gain / sqrt(fan))``."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(t.shape, mode))
    return normal_(t, 0.0, std, generator)


def xavier_uniform_(
    t: tp.Tensor, gain: float = 1.0, generator: Generator | None = None
) -> tp.Tensor:
    """Glorot uniform init: ``U(-b, b)`` with ``b = gain * sqrt(6 / (fan_in + fan_out))``.

    >>> import tpx as tp
    >>> xavier_uniform_(tp.zeros((4, 4))).shape
    (4, 4)
    """
    fan_in, fan_out = calculate_fan_in_and_fan_out(t.shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def xavier_normal_(t: tp.Tensor, gain: float = 1.0, generator: Generator | None = None):
    """Glorot normal init: ``N(0, gain * sqrt(2 / (fan_in + fan_out)))``."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(t.shape)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)
