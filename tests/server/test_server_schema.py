"""Property-based run of the OpenAPI schema (schemathesis): no request gives a 5xx answer,
and every answer matches its documented status code and response model."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tpx_inspect.server import create_app


@pytest.fixture(scope="module")
def api_schema(runs_dir):
    return schemathesis.openapi.from_asgi("/openapi.json", create_app([runs_dir]))


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_error_anywhere(case):
    case.call_and_validate(checks=[not_a_server_error])


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_error_on_real_ids(case):
    """The same with ids that exist, so that the endpoints' own parameters get fuzzed."""
    params = case.path_parameters or {}
    graph, node = params.get("graph_id"), params.get("node_id")
    if "run_id" in params:
        params["run_id"] = "nan" if isinstance(graph, int) and graph % 3 == 2 else "scoped"
    if isinstance(graph, int):
        params["graph_id"] = graph % 2 if params["run_id"] == "scoped" else 0
    if isinstance(node, int):
        params["node_id"] = node % 3
    if case.query and "run_a" in case.query:
        case.query.update(run_a="scoped", run_b="nan", graph_a=0, graph_b=0)
    case.call_and_validate(checks=[not_a_server_error])
