"""Every public name of tpx_inspect.checks has a docstring with a runnable example."""

from __future__ import annotations

from pathlib import Path

import pytest

import tpx as tp
import tpx_inspect.checks as checks
from tpx_inspect.checks import registry

NAMES = [n for n in checks.__all__ if callable(getattr(checks, n))]


@pytest.mark.parametrize("name", NAMES)
def test_public_names_have_an_example(name):
    doc = getattr(checks, name).__doc__ or ""
    assert ">>>" in doc, f"tpx_inspect.checks.{name} needs a docstring with an example"


def test_categories_cover_every_check():
    assert set(checks.CATEGORIES) >= {"rule", "accumulation", "kernel", "tracing", "order"}


def test_docs_table_is_the_registry_table():
    text = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text()
    lines = text.splitlines()
    start = lines.index("| check | category | what it does |")
    end = next(i for i in range(start, len(lines) + 1) if i == len(lines) or not lines[i])
    assert "\n".join(lines[start:end]) == registry.docs_table(), (
        "docs/checks.md's table differs from the check registry: paste "
        "tpx_inspect.checks.registry.docs_table() in its place"
    )


def test_every_surface_lists_the_registered_checks():
    from tpx_inspect.cli import _only_checks
    from tpx_inspect.server.routers.graphs import CheckName

    graph = registry.check_names("graph")
    assert graph == checks.GRAPH_CHECKS and registry.check_names() == checks.FUNCTION_CHECKS
    assert CheckName.__args__ == graph
    assert _only_checks(None) == graph
    assert set(checks.CATEGORIES) == {c for s in registry.checks() for c in s.categories}


def test_a_check_added_in_one_place_runs_everywhere_the_runner_runs():
    calls = []

    @registry.register_check("count-nodes", rank=45, summary="counts nodes")
    def count_nodes(graph, progress=None):
        calls.append(progress)
        return checks.CheckResult("count-nodes", len(graph.nodes), ())

    try:
        assert registry.check_names("graph")[3:5] == ("order", "count-nodes")
        with checks.record() as rec:
            (tp.ones(2, requires_grad=True) * 2).sum().backward()
        report = checks.run_graph_checks(rec.graph(), ["count-nodes"])
        assert report.result("count-nodes").checked == 3 and calls == [None]
        assert "| `count-nodes` | `count-nodes` | counts nodes |" in registry.docs_table()
        with pytest.raises(ValueError, match="already registered"):
            registry.register_check("count-nodes", rank=1, summary="x")(lambda g: None)
    finally:
        registry.unregister_check("count-nodes")
    assert "count-nodes" not in registry.check_names()
