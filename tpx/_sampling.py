"""Datasets, samplers and collation as ``torch.utils.data`` has them (re-exported by
:mod:`tpx.data`).

A map-style dataset answers ``len(ds)`` and ``ds[i]`` for one item; a sampler yields item
indices; a batch sampler groups them; ``collate_fn`` turns a list of items into a batch.
Random samplers draw from a ``tp.Generator`` (or a NumPy ``Generator``), so a seeded
generator gives the same order on every run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import tpx as tp

__all__ = [
    "BatchSampler", "Dataset", "RandomSampler", "Sampler", "SequentialSampler", "Subset",
    "SubsetRandomSampler", "default_collate",
]  # fmt: skip


class Dataset:
    """Base class of map-style datasets: subclasses define ``__getitem__`` and ``__len__``.

    >>> class Squares(Dataset):
    ...     def __len__(self): return 4
    ...     def __getitem__(self, i): return float(i * i)
    >>> Squares()[3], len(Squares())
    (9.0, 4)
    """

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``.

    >>> s = Subset([10, 11, 12, 13], [3, 0]); len(s), s[0]
    (2, 13)
    """

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def _permutation(generator: Any, n: int) -> list[int]:
    if generator is None:
        return tp.randperm(n).tolist()
    return generator.permutation(n).tolist()  # a tp.Generator or a NumPy Generator


def _integers(generator: Any, n: int, size: int) -> list[int]:
    if isinstance(generator, np.random.Generator):
        return generator.integers(0, n, size).tolist()
    return tp.randint(0, n, (size,), generator=generator).tolist()


class Sampler:
    """Base class of samplers: iterables of dataset indices with a length."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class SequentialSampler(Sampler):
    """Indices ``0 .. len(data_source) - 1`` in order.

    >>> list(SequentialSampler(range(3)))
    [0, 1, 2]
    """

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in a random order (a new permutation each pass), or ``num_samples`` indices
    drawn with replacement; from ``generator`` (a ``tp.Generator`` or a NumPy ``Generator``),
    else from P10's default generator (``tp.manual_seed``).

    >>> list(RandomSampler(range(4), generator=tp.Generator().manual_seed(0))) != [0, 1, 2, 3]
    True
    """

    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:  # fmt: skip
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        if num_samples is not None and num_samples <= 0:
            raise ValueError(f"RandomSampler: num_samples must be positive, got {num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.replacement:
            return iter(_integers(self.generator, n, self.num_samples))
        order: list[int] = []
        while len(order) < self.num_samples:
            order += _permutation(self.generator, n)
        return iter(order[: self.num_samples])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a new one each pass).

    >>> sorted(SubsetRandomSampler([5, 7, 9]))
    [5, 7, 9]
    """

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        return iter([self.indices[i] for i in _permutation(self.generator, len(self.indices))])

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter, or dropped with
    ``drop_last``).

    >>> list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"BatchSampler: batch_size must be an int >= 1, got {batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(int(i))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n, b = len(self.sampler), self.batch_size  # type: ignore[arg-type]
        return n // b if self.drop_last else -(-n // b)


def default_collate(batch: list[Any]) -> Any:
    """A batch from a list of items, as PyTorch's ``default_collate``: tensors and arrays are
    stacked, Python ints become an int64 tensor and floats a float64 one, strings stay a list,
    and tuples, lists, named tuples and dicts are collated field by field.

    >>> xs = [(tp.zeros(2), 1), (tp.ones(2), 0)]
    >>> x, y = default_collate(xs); x.shape, y.tolist(), y.dtype
    ((2, 2), [1, 0], dtype('int64'))
    """
    elem = batch[0]
    if isinstance(elem, tp.Tensor):
        return tp.stack(batch)
    if isinstance(elem, (np.ndarray, np.generic)):
        return tp.asarray(np.stack([np.asarray(b) for b in batch]))
    if isinstance(elem, (bool, int, float)):
        kind = bool if isinstance(elem, bool) else np.int64 if isinstance(elem, int) else np.float64
        return tp.asarray(np.asarray(batch, dtype=kind))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise ValueError("default_collate: the items of a batch have different lengths")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(
        f"default_collate: cannot batch items of type {type(elem).__name__}; items may be "
        "tensors, arrays, numbers, strings, or tuples/lists/dicts of them; pass collate_fn"
    )
