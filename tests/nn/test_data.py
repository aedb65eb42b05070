"""The data helper: seeded shuffling, complete epochs, splits and the bundled digits."""

from __future__ import annotations

import numpy as np
import pytest

import tpx as tp
from tpx.data import DataLoader, TensorDataset, load_digits, train_test_split


def epochs(loader: DataLoader, n: int) -> list[list[int]]:
    return [[int(v) for (b,) in loader for v in b.tolist()] for _ in range(n)]


def test_shuffled_epochs_cover_everything_and_repeat_with_the_seed():
    ds = TensorDataset(np.arange(23))
    first = epochs(DataLoader(ds, batch_size=5, shuffle=True, seed=7), 3)
    again = epochs(DataLoader(ds, batch_size=5, shuffle=True, seed=7), 3)
    other = epochs(DataLoader(ds, batch_size=5, shuffle=True, seed=8), 1)
    assert first == again
    assert all(sorted(e) == list(range(23)) for e in first)
    assert first[0] != first[1] and first[0] != other[0]


def test_batches_sizes_and_drop_last():
    ds = TensorDataset(np.zeros((10, 3), np.float32), np.arange(10))
    sizes = [len(y) for _, y in DataLoader(ds, batch_size=4)]
    assert sizes == [4, 4, 2] and len(DataLoader(ds, batch_size=4)) == 3
    assert [len(y) for _, y in DataLoader(ds, batch_size=4, drop_last=True)] == [4, 4]
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert isinstance(x, tp.Tensor) and x.dtype == np.float32 and y.dtype == np.int64


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"different lengths: \(3,\), \(4,\)"):
        TensorDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(TensorDataset(np.zeros(3)), batch_size=0)


def test_train_test_split_keeps_pairs_together():
    x = np.arange(20) * 10
    y = np.arange(20)
    xtr, xte, ytr, yte = train_test_split(x, y, test_fraction=0.25, seed=1)
    assert len(xte) == 5 and np.array_equal(xtr, ytr * 10) and np.array_equal(xte, yte * 10)
    assert sorted([*ytr, *yte]) == list(range(20))


def test_load_digits():
    xtr, ytr, xte, _yte = load_digits()
    assert xtr.shape == (1438, 64) and xte.shape == (359, 64)
    assert xtr.dtype == np.float32 and xtr.min() >= 0.0 and xtr.max() <= 1.0
    assert set(np.unique(ytr)) == set(range(10))


# -- PyTorch's data-loading surface ---------------------------------------------------------
class Chars(tp.data.Dataset):
    """A per-item dataset: (context of 2 ints, next int), as a makemore-style model reads."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        return tp.asarray([i, i + 1]), i + 2


def test_per_item_dataset_with_default_collate():
    batches = list(DataLoader(Chars(5), batch_size=2))
    assert len(batches) == 3
    x, y = batches[0]
    assert x.tolist() == [[0, 1], [1, 2]] and y.tolist() == [2, 3] and y.dtype == np.int64
    assert [len(y) for _, y in DataLoader(Chars(5), batch_size=2, drop_last=True)] == [2, 2]


def test_shuffle_with_a_generator_repeats_and_covers_everything():
    def order(seed):
        g = tp.Generator().manual_seed(seed)
        loader = DataLoader(Chars(7), batch_size=3, shuffle=True, generator=g)
        return [[int(v) - 2 for v in y.tolist()] for _ in range(2) for _, y in loader]

    first, again = order(1), order(1)
    assert first == again and first != order(2)
    epoch = [v for b in first[:3] for v in b]
    assert sorted(epoch) == list(range(7)) and epoch != list(range(7))


def test_samplers_and_collate_fn():
    from tpx.data import BatchSampler, RandomSampler, SequentialSampler, Subset

    seen = []
    loader = DataLoader(Chars(4), batch_size=2, sampler=[3, 1, 0, 2],
                        collate_fn=lambda items: seen.append(len(items)) or items)  # fmt: skip
    assert [[y for _, y in b] for b in loader] == [[5, 3], [2, 4]] and seen == [2, 2]
    bs = BatchSampler(SequentialSampler(range(5)), 2, drop_last=True)
    assert [y.tolist() for _, y in DataLoader(Chars(5), batch_sampler=bs)] == [[2, 3], [4, 5]]
    g = tp.Generator().manual_seed(0)
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=10, generator=g))
    assert len(drawn) == 10 and set(drawn) <= {0, 1, 2}
    assert Subset(Chars(9), [4])[0][1] == 6
    assert [item[1] for item in DataLoader(Chars(2), batch_size=None)] == [2, 3]


def test_loader_argument_errors():
    with pytest.raises(ValueError, match="exclude each other"):
        DataLoader(Chars(3), sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler excludes"):
        DataLoader(Chars(3), batch_size=2, batch_sampler=[[0]])
    with pytest.raises(TypeError, match="unexpected keyword"):
        DataLoader(Chars(3), batch_szie=2)
    with pytest.raises(TypeError, match="cannot batch items of type object"):
        next(iter(DataLoader([object()], batch_size=1)))
