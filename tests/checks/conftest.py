"""Shared setup of the check tests: the rule case table of tests/tpx and a buggy backend."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import p10

# NOTE: tests/ is not a package; the rule sweep reuses the case table next to the TPX tests.
_TPX_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tpx")
if _TPX_TESTS not in sys.path:
    sys.path.insert(0, _TPX_TESTS)


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
