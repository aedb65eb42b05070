"""Shared setup of the backend tests: each optional backend in turn (see tests/helpers/backends)."""

from __future__ import annotations

from typing import Any

import pytest

import p10
from tests.helpers.backends import BACKENDS, load


@pytest.fixture(params=list(BACKENDS))
def backend(request: Any) -> p10.Backend:
    """Each optional backend in turn."""
    return load(request.param)
