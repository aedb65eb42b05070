"""Which optional P10 backends the backend tests sweep, and how a test gets one.

Every backend of :data:`BACKENDS` is tried; one whose library is not installed skips (via
``pytest.importorskip``), so without the optional libraries only the NumPy path runs.
"""

from __future__ import annotations

import os

import pytest

import p10

# The optional backends and the module each one needs.
BACKENDS: dict[str, str] = {
    "array_api_strict": "array_api_strict",
    "torch": "torch",
    "dask": "dask",
}
FULL = os.environ.get("P10_BACKEND_SWEEP", "") == "full"
"""``P10_BACKEND_SWEEP=full`` runs the whole TPX sweep on every backend instead of a subset."""


def load(name: str) -> p10.Backend:
    """The registered backend ``name``, or a skip when its library is missing."""
    pytest.importorskip("array_api_compat")
    pytest.importorskip(BACKENDS[name])
    return p10.get_backend(name)
