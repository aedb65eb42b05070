"""Shared setup of the check tests: a buggy backend."""

from __future__ import annotations

import numpy as np
import pytest

import p10


def make_backend(name: str, **wrong: object) -> p10.Backend:
    """A copy of the numpy backend named ``name`` with the kernels in ``wrong`` replaced."""
    spec = p10.get_backend("numpy")
    kernels = dict(spec.kernels)
    kernels.update({p10.Op[k]: v for k, v in wrong.items()})
    return p10.Backend(
        name, kernels, np.ndarray, np.asarray, np.asarray, setitem=spec.setitem,
        may_share_memory=spec.may_share_memory,
    )  # fmt: skip


@pytest.fixture
def backend_factory():
    """Register test-only backends; every one is removed after the test."""
    handles = []

    def register(name: str, **wrong: object) -> str:
        handles.append(p10.register_backend(make_backend(name, **wrong)))
        return name

    yield register
    for h in handles:
        h.remove()
