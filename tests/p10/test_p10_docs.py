"""Every public name of P10 has a docstring with a runnable example (run by --doctest-modules)."""

from __future__ import annotations

import inspect

import pytest

import p10
import p10.random


def _public_callables():
    names = [(f"p10.{n}", getattr(p10, n)) for n in p10.__all__]
    names += [(f"p10.random.{n}", getattr(p10.random, n)) for n in ("Generator", "manual_seed")]
    return [(n, obj) for n, obj in names if inspect.isfunction(obj) or inspect.isclass(obj)]


@pytest.mark.parametrize(
    "name, obj", _public_callables(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_public_names_have_an_example(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert ">>>" in doc, f"{name} needs a docstring with a runnable example"


def test_tensor_methods_and_properties_are_documented():
    missing = [
        name
        for name, member in inspect.getmembers(p10.Tensor)
        if not name.startswith("_") and not inspect.getdoc(member)
    ]
    assert not missing, f"undocumented Tensor members: {missing}"


def test_all_lists_only_existing_names():
    assert sorted(set(p10.__all__)) == sorted(p10.__all__)
    assert all(hasattr(p10, n) for n in p10.__all__)
