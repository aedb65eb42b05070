"""The vectorized seeding of the checks gives exactly ``default_rng([seed, i])``'s numbers."""

from __future__ import annotations

import numpy as np
import pytest

from tpx_inspect.checks._differences import Draws
from tpx_inspect.checks._seeds import normals, seeded_states

IDS = [0, 1, 2, 17, 255, 2**31, 2**32 - 1, 2**32, 2**33 + 5, 2**64 + 3, 99_999]


@pytest.mark.parametrize("seed", [0, 1, 1234, 2**32 - 1, 2**32, 2**40 + 7])
def test_states_equal_default_rng(seed):
    for i, state in zip(IDS, seeded_states(seed, IDS)):
        assert state == np.random.default_rng([seed, i]).bit_generator.state, (seed, i)


def test_normals_equal_default_rng_bit_for_bit():
    ids = [*range(300), *IDS]
    got = normals(3, ids, 7)
    want = np.stack([np.random.default_rng([3, i]).standard_normal(7) for i in ids])
    assert got.shape == (len(ids), 7) and np.array_equal(got, want)


def test_a_different_seed_or_id_gives_other_numbers():
    a, b, c = normals(0, [1], 4), normals(1, [1], 4), normals(0, [2], 4)
    assert not np.array_equal(a, b) and not np.array_equal(a, c)


def test_draws_split_one_call_into_the_shapes_in_order():
    d = Draws([4, 8], 0, [(2, 3), (5,)])
    first, second = d.next(), d.next()
    whole = np.random.default_rng([0, 8]).standard_normal(11)
    assert first.shape == (2, 2, 3) and second.shape == (2, 5)
    assert np.array_equal(first[1].reshape(-1), whole[:6]) and np.array_equal(second[1], whole[6:])


def test_no_ids_and_no_draws():
    assert normals(0, [], 3).shape == (0, 3)
    assert normals(0, [1, 2], 0).shape == (2, 0)
