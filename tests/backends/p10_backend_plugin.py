"""A pytest plugin that runs any test suite with ``P10_TEST_BACKEND`` as P10's default backend.

Tests that create tensors without naming a backend (``tp.asarray(a)``, ``p10.ones(3)``) then
get tensors of that backend, so the TPX suite runs unchanged on PyTorch, Dask, ...::

    P10_TEST_BACKEND=torch .venv/bin/python -m pytest -p tests.backends.p10_backend_plugin tests/tpx

(run from the repository root: ``tests`` is a package.) A backend that is not installed
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


_NO_VIEWS = (
    "Dask arrays are values without views or shared memory: a write into a tensor made from "
    "another (a view, a detached copy) never reaches the other"
)
# Tests whose subject does not exist on a backend, with the reason; skipped there, never hidden.
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "*": {
        "test_leaf_takes_a_gradient_nothing_else_holds_without_a_copy": (
            "the engine moves a fresh gradient into .grad without a copy only for NumPy "
            "memory; on other backends it copies (same values, one more copy)"
        ),
    },
    "torch": {
        "test_backward_releases_saved_memory_and_dropping_the_loss_releases_the_rest": (
            "tracemalloc measures NumPy's allocations; PyTorch's allocator is invisible to it"
        ),
    },
    "dask": {
        "test_million_node_chain_no_recursion_and_freed": (
            "a million-op chain is a million-task lazy Dask graph, which Dask cannot compute "
            "and free in reasonable time and stack; persist long chains every few thousand ops"
        ),
        "test_backward_releases_saved_memory_and_dropping_the_loss_releases_the_rest": (
            "a Dask tensor holds a graph, not memory: nothing is allocated until computed"
        ),
        "test_modifying_through_a_view_then_using_the_base_raises": _NO_VIEWS,
        "test_in_place_on_view_of_leaf_requiring_grad_raises": _NO_VIEWS,
        "test_detach_shares_value_and_cuts_graph": _NO_VIEWS,
    },
}


def pytest_report_header(config: pytest.Config) -> str:
    return f"p10 test backend: {selected() or 'numpy (default)'}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    name = selected()
    if name is None:
        return
    table = {**NOT_APPLICABLE["*"], **NOT_APPLICABLE.get(name.partition(":")[0], {})}
    for item in items:
        reason = table.get(item.originalname if hasattr(item, "originalname") else item.name)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"on {name}: {reason}"))


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
