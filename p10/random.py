"""Seeded random tensors: :class:`Generator` objects and a default generator set by
:func:`manual_seed`. Values come from NumPy's PCG64, so a seed gives the same numbers on every
backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from p10._backend import Backend, get_backend
from p10._creation import normalize_shape
from p10._dtypes import get_default_dtype, to_dtype
from p10._tensor import Tensor, wrap


class Generator:
    """A random number generator with its own state.

    >>> g = Generator(0)
    >>> g.randn((2, 3)).shape, g.rand(2).dtype
    ((2, 3), dtype('float32'))
    """

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def manual_seed(self, seed: int) -> Generator:
        """Reset the state from ``seed``; returns self."""
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def _out(self, arr: np.ndarray, dtype: Any, backend: Any) -> Tensor:
        b: Backend = get_backend(backend)
        dt = to_dtype(dtype) if dtype is not None else get_default_dtype()
        return wrap(b.from_numpy(arr.astype(dt, copy=False)), b)

    def rand(self, shape: Any, *, dtype: Any = None, backend: Any = None) -> Tensor:
        """Uniform values in ``[0, 1)``."""
        return self._out(self._rng.random(normalize_shape(shape, "rand")), dtype, backend)

    def randn(self, shape: Any, *, dtype: Any = None, backend: Any = None) -> Tensor:
        """Standard normal values."""
        arr = self._rng.standard_normal(normalize_shape(shape, "randn"))
        return self._out(arr, dtype, backend)

    def normal(
        self,
        mean: float = 0.0,
        std: float = 1.0,
        shape: Any = (),
        *,
        dtype: Any = None,
        backend: Any = None,
    ) -> Tensor:
        """Normal values with the given mean and standard deviation."""
        arr = self._rng.normal(mean, std, normalize_shape(shape, "normal"))
        return self._out(arr, dtype, backend)

    def uniform(
        self,
        low: float = 0.0,
        high: float = 1.0,
        shape: Any = (),
        *,
        dtype: Any = None,
        backend: Any = None,
    ) -> Tensor:
        """Uniform values in ``[low, high)``."""
        arr = self._rng.uniform(low, high, normalize_shape(shape, "uniform"))
        return self._out(arr, dtype, backend)

    def randint(
        self, low: int, high: int, shape: Any = (), *, dtype: Any = "int64", backend: Any = None
    ) -> Tensor:
        """Integers in ``[low, high)``."""
        arr = self._rng.integers(low, high, normalize_shape(shape, "randint"))
        return self._out(arr, dtype, backend)

    def permutation(self, n: int, *, backend: Any = None) -> Tensor:
        """A random permutation of ``range(n)`` as int64."""
        return self._out(self._rng.permutation(n), "int64", backend)

    def bernoulli(self, p: float, shape: Any, *, dtype: Any = None, backend: Any = None) -> Tensor:
        """Ones with probability ``p``, else zeros."""
        arr = self._rng.random(normalize_shape(shape, "bernoulli")) < p
        return self._out(arr, dtype, backend)


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator used by ``p10.rand``, ``p10.randn``, ...

    >>> import p10
    >>> _ = p10.manual_seed(1); a = p10.randn(3)
    >>> _ = p10.manual_seed(1); bool((a == p10.randn(3)).all())
    True
    """
    return default_generator.manual_seed(seed)


def rand(shape: Any, *, dtype: Any = None, backend: Any = None) -> Tensor:
    """Uniform values in ``[0, 1)`` from the default generator.

    >>> import p10
    >>> p10.rand((2, 2)).shape
    (2, 2)
    """
    return default_generator.rand(shape, dtype=dtype, backend=backend)


def randn(shape: Any, *, dtype: Any = None, backend: Any = None) -> Tensor:
    """Standard normal values from the default generator.

    >>> import p10
    >>> p10.randn(3).dtype
    dtype('float32')
    """
    return default_generator.randn(shape, dtype=dtype, backend=backend)


def randint(low: int, high: int, shape: Any = (), *, dtype: Any = "int64", backend: Any = None):
    """Integers in ``[low, high)`` from the default generator.

    >>> import p10
    >>> int(p10.randint(0, 1, (3,)).sum())
    0
    """
    return default_generator.randint(low, high, shape, dtype=dtype, backend=backend)


def normal(
    mean: float = 0.0, std: float = 1.0, shape: Any = (), *, dtype: Any = None, backend: Any = None
) -> Tensor:
    """Normal values from the default generator.

    >>> import p10
    >>> p10.normal(0.0, 2.0, (4,)).shape
    (4,)
    """
    return default_generator.normal(mean, std, shape, dtype=dtype, backend=backend)


def uniform(
    low: float = 0.0, high: float = 1.0, shape: Any = (), *, dtype: Any = None, backend: Any = None
) -> Tensor:
    """Uniform values in ``[low, high)`` from the default generator.

    >>> import p10
    >>> bool((p10.uniform(2.0, 3.0, (5,)) >= 2.0).all())
    True
    """
    return default_generator.uniform(low, high, shape, dtype=dtype, backend=backend)
