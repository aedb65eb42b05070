"""A pytest plugin that runs any test suite with ``P10_TEST_BACKEND`` as P10's default backend.

Tests that create tensors without naming a backend (``tp.asarray(a)``, ``p10.ones(3)``) then
get tensors of that backend, so the TPX suite runs unchanged on PyTorch, Dask, ...::

    P10_TEST_BACKEND=torch .venv/bin/python -m pytest -p p10_backend_plugin tests/tpx

(``tests/backends`` must be importable: its ``conftest.py`` puts it on ``sys.path`` when
pytest collects it, or set ``PYTHONPATH=tests/backends``.) A backend that is not installed
skips every test with the reason. ``tests/backends/test_tpx_on_backends.py`` does the same
in-process for a representative part of the suite.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import p10

ENV = "P10_TEST_BACKEND"


def selected() -> str | None:
    """The backend named by ``P10_TEST_BACKEND`` (``None`` or ``"numpy"``: the default)."""
    name = os.environ.get(ENV, "").strip()
    return name or None


def pytest_report_header(config: pytest.Config) -> str:
    return f"p10 test backend: {selected() or 'numpy (default)'}"


@pytest.fixture(autouse=True)
def _p10_default_backend() -> Iterator[None]:
    name = selected()
    if name is None:
        yield
        return
    try:
        backend = p10.get_backend(name)
    except p10.BackendError as e:
        pytest.skip(f"{ENV}={name}: {e}")
    with p10.use_backend(backend):
        yield
