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
