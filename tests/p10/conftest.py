"""Shared setup of the P10 tests: the case table next to this file, and state restored."""

from __future__ import annotations

import pytest

import p10
from tests.helpers.p10_cases import SUBSET_NAME, make_subset_backend


@pytest.fixture(autouse=True)
def _restore_p10_state():
    """Every test starts on the numpy backend with float32 as the default float dtype."""
    backends = p10.list_backends()
    with p10.default_dtype("float32"), p10.use_backend("numpy"):
        yield
    assert p10.list_backends() == backends, "a test left a backend registered"


@pytest.fixture
def subset_backend():
    """The test-only backend with a subset of the kernels, registered for one test."""
    with p10.register_backend(make_subset_backend()):
        yield p10.get_backend(SUBSET_NAME)
