"""Data loading shaped like ``torch.utils.data`` (also importable as ``tpx.utils.data``):
datasets, samplers, collation and a DataLoader; plus splits and the digits data set that
scikit-learn ships inside its package (no download).

>>> import numpy as np, tpx as tp
>>> from tpx.data import DataLoader, TensorDataset
>>> ds = TensorDataset(np.arange(10.0).reshape(5, 2), np.arange(5))
>>> [y.tolist() for _, y in DataLoader(ds, batch_size=2, shuffle=True, seed=0)]
[[2, 4], [3, 0], [1]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import tpx as tp
from tpx._sampling import (
    BatchSampler,
    Dataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    default_collate,
)

__all__ = [
    "BatchSampler", "DataLoader", "Dataset", "RandomSampler", "Sampler", "SequentialSampler",
    "Subset", "SubsetRandomSampler", "TensorDataset", "default_collate", "load_digits",
    "train_test_split",
]  # fmt: skip


class TensorDataset(Dataset):
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
    """Batches of a dataset, as ``torch.utils.data.DataLoader``.

    ``dataset`` is map-style (``len`` and one item per ``ds[i]``). Indices come from
    ``sampler`` (or, with ``shuffle``, a :class:`RandomSampler`, else a
    :class:`SequentialSampler`), grouped by ``batch_sampler`` (or ``batch_size`` and
    ``drop_last``); ``collate_fn`` (default :func:`default_collate`) makes each batch.
    ``batch_size=None`` yields single items. Shuffled orders come from ``generator``, or, when
    none is given, from a NumPy PCG64 generator seeded with ``seed``, so a loader yields the
    same batches on every run. Loading runs in this process: ``num_workers`` and
    ``pin_memory`` are accepted and change nothing.

    >>> dl = DataLoader(TensorDataset(np.arange(6)), batch_size=4, drop_last=True)
    >>> len(dl), [b.tolist() for (b,) in dl]
    (1, [[0, 1, 2, 3]])
    >>> pairs = [(float(i), i % 2) for i in range(5)]
    >>> [y.tolist() for _, y in DataLoader(pairs, batch_size=2)]
    [[0, 1], [0, 1], [0]]
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool = False,
                 sampler: Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Any = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 seed: int | None = 0, **options: Any) -> None:  # fmt: skip
        _check_loader_args(batch_size, shuffle, sampler, batch_sampler, drop_last)
        unknown = set(options) - _TORCH_ONLY
        if unknown:
            raise TypeError(f"DataLoader got unexpected keyword arguments {sorted(unknown)}")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.collate_fn, self.num_workers = collate_fn, num_workers
        if generator is None and shuffle:
            generator = np.random.Generator(np.random.PCG64(seed))
        self.generator = generator
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else None
            sampler = sampler or SequentialSampler(dataset)
        self.sampler = sampler
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_sampler = batch_sampler

    def __len__(self) -> int:
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def __iter__(self) -> Iterator[Any]:
        if self.batch_sampler is None:  # batch_size=None: one item at a time
            for i in self.sampler:
                item = self.dataset[i]
                yield item if self.collate_fn is None else self.collate_fn(item)
            return
        # NOTE: a TensorDataset gathers a whole batch with one index array (the same batch
        # default_collate stacks from single items, at a fraction of the cost)
        whole = isinstance(self.dataset, TensorDataset) and self.collate_fn is None
        collate = self.collate_fn or default_collate
        for indices in self.batch_sampler:
            if whole:
                yield self.dataset[np.asarray(indices, dtype=np.int64)]
            else:
                yield collate([self.dataset[i] for i in indices])


# PyTorch's options of worker processes and memory pinning: accepted, nothing to do here
_TORCH_ONLY = {"prefetch_factor", "persistent_workers", "pin_memory_device", "in_order"}


def _check_loader_args(batch_size: Any, shuffle: bool, sampler: Any, batch_sampler: Any,
                       drop_last: bool) -> None:  # fmt: skip
    """PyTorch's rules for the arguments that choose the indices, with its messages' facts."""
    if batch_size is not None and (
        not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1
    ):
        raise ValueError(f"DataLoader: batch_size must be an int >= 1 or None, got {batch_size!r}")
    if sampler is not None and shuffle:
        raise ValueError("DataLoader: sampler and shuffle=True exclude each other")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler or drop_last):
        raise ValueError(
            "DataLoader: batch_sampler excludes batch_size, shuffle, sampler and drop_last"
        )


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
