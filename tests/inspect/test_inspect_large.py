"""A 100,000-node chain: captured, saved, loaded and exported, all without recursion."""

from __future__ import annotations

import time

import pytest

import tpx_inspect
from tests.inspect._inspect_graphs import chain_capture
from tpx_inspect._cli_tables import graphs_table, nodes_table


@pytest.mark.slow
def test_a_hundred_thousand_node_chain(tmp_path):
    trace = chain_capture(99_998).trace
    g = trace.graphs[0]
    assert len(g.nodes) == 100_000 and g.order[0] == 99_999 and g.order[-1] == 0
    path, _ = tpx_inspect.save(trace, str(tmp_path / "chain.json"))
    t0 = time.process_time()  # CPU seconds of this process: the machine's load does not count
    back = tpx_inspect.load(path)
    load_s = time.process_time() - t0
    b = back.graphs[0]
    t0 = time.process_time()  # `show`'s tables: linear in nodes (a set per node made them
    table = nodes_table(b, 0)  # quadratic: 99k nodes took over 300 s, 100x a load); a
    graphs_table(back)  # complexity guard measured against the load, with room for noise
    assert time.process_time() - t0 < 5 * load_s and table.row_count == 200
    assert len(b.nodes) == 100_000 and b.node(99_998).inputs[0].src == 99_997
    assert b.grad(0).shape == (4,)
    dot = tpx_inspect.to_dot(b, fold=False, stub=False)  # every node and edge
    assert dot.count("->") == 99_999
    assert tpx_inspect.to_dot(b).count("->") < 100  # the view model: the chain folds
    assert len(tpx_inspect.to_model_explorer(b)["graphs"][0]["nodes"]) == 100_000
