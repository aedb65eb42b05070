"""A small data helper: datasets of arrays, seeded shuffled batches, splits, and the digits
data set that scikit-learn ships inside its package (no download).

>>> import numpy as np, tpx as tp
>>> from tpx.data import DataLoader, TensorDataset
>>> ds = TensorDataset(np.arange(10.0).reshape(5, 2), np.arange(5))
>>> [y.tolist() for _, y in DataLoader(ds, batch_size=2, shuffle=True, seed=0)]
[[2, 4], [3, 0], [1]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

import tpx as tp

__all__ = ["DataLoader", "TensorDataset", "load_digits", "train_test_split"]


class TensorDataset:
    """Arrays of equal length indexed together; ``ds[idx]`` returns a tuple of tensors.

    >>> ds = TensorDataset(np.zeros((4, 3)), np.arange(4))
    >>> len(ds), [t.shape for t in ds[np.array([0, 2])]]
    (4, [(2, 3), (2,)])
    """

    def __init__(self, *arrays: Any) -> None:
        if not arrays:
            raise ValueError("TensorDataset: give at least one array")
        self.arrays = [np.asarray(a.numpy() if isinstance(a, tp.Tensor) else a) for a in arrays]
        lengths = {len(a) for a in self.arrays}
        if len(lengths) != 1:
            shapes = ", ".join(str(a.shape) for a in self.arrays)
            raise ValueError(f"TensorDataset: arrays of different lengths: {shapes}")

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __getitem__(self, index: Any) -> tuple[tp.Tensor, ...]:
        return tuple(tp.asarray(np.ascontiguousarray(a[index])) for a in self.arrays)


class DataLoader:
    """Batches of a dataset, reshuffled at every pass when ``shuffle`` is set.

    The permutations come from a NumPy PCG64 generator seeded with ``seed``, so a loader with
    the same seed yields the same batches in the same order on every run.

    >>> dl = DataLoader(TensorDataset(np.arange(6)), batch_size=4, drop_last=True)
    >>> len(dl), [b.tolist() for (b,) in dl]
    (1, [[0, 1, 2, 3]])
    """

    def __init__(
        self,
        dataset: TensorDataset,
        batch_size: int = 1,
        shuffle: bool = False,
        seed: int | None = 0,
        drop_last: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be >= 1, got {batch_size}")
        self.dataset, self.batch_size = dataset, batch_size
        self.shuffle, self.drop_last = shuffle, drop_last
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def __len__(self) -> int:
        n, b = len(self.dataset), self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def __iter__(self) -> Iterator[tuple[tp.Tensor, ...]]:
        n = len(self.dataset)
        order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        for i in range(len(self)):
            yield self.dataset[order[i * self.batch_size : (i + 1) * self.batch_size]]


def train_test_split(*arrays: Any, test_fraction: float = 0.2, seed: int = 0) -> list[np.ndarray]:
    """Shuffle arrays of equal length together and split them: ``[a_train, a_test, b_train,
    b_test, ...]``.

    >>> xtr, xte = train_test_split(np.arange(10), test_fraction=0.3, seed=0)
    >>> len(xtr), len(xte)
    (7, 3)
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"train_test_split: test_fraction must be in (0, 1), got {test_fraction}")
    n = len(arrays[0])
    order = np.random.Generator(np.random.PCG64(seed)).permutation(n)
    n_test = round(n * test_fraction)
    out = []
    for a in arrays:
        a = np.asarray(a)
        out += [a[order[n_test:]], a[order[:n_test]]]
    return out


def load_digits(
    test_fraction: float = 0.2, seed: int = 0, dtype: Any = np.float32
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 8x8 handwritten digits (1797 images, 10 classes) from scikit-learn's bundled copy,
    scaled to [0, 1] and split: ``(x_train, y_train, x_test, y_test)``, x of shape (N, 64).

    >>> xtr, ytr, xte, yte = load_digits()
    >>> xtr.shape, xte.shape, int(ytr.max())
    ((1438, 64), (359, 64), 9)
    """
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ImportError as e:  # scikit-learn is a dev dependency only
        raise ImportError(
            "load_digits needs scikit-learn (pip install scikit-learn); "
            "it ships the digits data inside its package"
        ) from e
    bunch = sk_load_digits()
    x = (bunch.data / 16.0).astype(dtype)
    y = bunch.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_fraction=test_fraction, seed=seed
    )
    return x_train, y_train, x_test, y_test
