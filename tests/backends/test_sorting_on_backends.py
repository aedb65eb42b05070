"""The composed searches of issue 18 on every optional backend, against NumPy."""

from __future__ import annotations

import numpy as np

import p10


def test_searchsorted_binary_search_on_every_backend(backend: p10.Backend) -> None:
    name = backend.name
    x1 = np.sort(np.r_[np.arange(400.0) % 97, np.nan])
    x2 = np.r_[np.arange(-2.0, 200.0), np.nan]
    assert x1.size * x2.size > p10._sorting._PAIRWISE_LIMIT  # the binary-search path
    for side in ("left", "right"):
        t1, t2 = p10.asarray(x1, backend=name), p10.asarray(x2, backend=name)
        out = p10.searchsorted(t1, t2, side=side)
        assert out.tolist() == np.searchsorted(x1, x2, side=side).tolist()
