"""Every public name of tpx_inspect.checks has a docstring with a runnable example."""

from __future__ import annotations

import pytest

import tpx_inspect.checks as checks

NAMES = [n for n in checks.__all__ if callable(getattr(checks, n))]


@pytest.mark.parametrize("name", NAMES)
def test_public_names_have_an_example(name):
    doc = getattr(checks, name).__doc__ or ""
    assert ">>>" in doc, f"tpx_inspect.checks.{name} needs a docstring with an example"


def test_categories_cover_every_check():
    assert set(checks.CATEGORIES) >= {"rule", "accumulation", "kernel", "tracing", "order"}
