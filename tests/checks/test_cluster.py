"""The local check on a real 2-worker Dask LocalCluster on 127.0.0.1 (started once for the
module, always closed): the same findings, skips and notes as in one process, from the
Python API and from ``tpx-inspect check --scheduler``."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import p10
import tpx as tp
from p10 import Op
from tpx_inspect.checks import LocalOptions, capture_call, local_check
from tpx_inspect.checks.cluster import cluster_outcomes, connect
from tpx_inspect.checks.local import backward_order, check_group, groups_of, replayable
from tpx_inspect.cli import cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("dask.distributed")
    with connect(workers=2) as c:
        yield c


def _layers(x, w, b, n=20):
    h = x
    for _ in range(n):
        z = (h @ w + b).tanh()
        h = z * 0.5 + z.sin() * 0.5
    return (h * h).mean()


def _graph():
    rng = np.random.default_rng(1)
    inputs = [
        tp.asarray(rng.standard_normal((4, 6)) * 0.5, requires_grad=True),
        tp.asarray(rng.standard_normal((6, 6)) * 0.3, requires_grad=True),
        tp.asarray(rng.standard_normal(6) * 0.1, requires_grad=True),
    ]
    h = tp.register_rule(Op.TANH, lambda ctx, g: (g * p10.tanh(ctx.inputs[0]),), save=(0,))
    try:  # a planted wrong rule (a lambda: it must travel to the workers)
        return capture_call(_layers, inputs)
    finally:
        h.remove()


def test_cluster_findings_equal_one_process(client):
    graph = _graph()
    assert len(client.scheduler_info()["workers"]) == 2
    alone = local_check(graph)
    seen = []
    spread = local_check(graph, client=client, progress=lambda done, total: seen.append(done))
    assert [f.name for f in alone.findings] == ["TanhBackward"] * 20
    assert spread.findings == alone.findings
    assert (spread.skips, spread.notes, spread.checked) == (alone.skips, alone.notes,
                                                            alone.checked)  # fmt: skip
    # one call per task or group checked here, the count of nodes done across workers
    assert seen == sorted(seen) and seen[-1] == len(graph.nodes) and len(seen) >= 6, seen


@pytest.mark.parametrize("share", [False, True])
def test_every_node_is_checked_once_on_the_workers_or_here(client, share):
    graph = _graph()
    opts = LocalOptions(batch_size=8)  # many small groups: some are checked here with share
    _, todo = replayable(graph, backward_order(graph))
    stats = {}
    got = cluster_outcomes(client, groups_of(todo, opts), opts, check_group, stats=stats,
                           total=len(todo), share=share)  # fmt: skip
    assert sorted(got) == sorted(node.id for node, _ in todo)
    assert stats["shipped_nodes"] + stats["here_nodes"] == len(todo)
    assert stats["shipped_nodes"] > 0 and len(stats["task_cpu_s"]) >= 2
    assert stats["here_nodes"] == 0 or share
    alone = {}
    for group in groups_of(todo, opts):
        alone.update(check_group(group, opts))
    assert got == alone


def test_cluster_uses_the_options(client):
    graph = _graph()
    opts = LocalOptions(directions=1, cotangents=2, seed=3)
    assert local_check(graph, opts, client=client).findings == local_check(graph, opts).findings


def test_cli_check_on_a_scheduler_with_only(client, tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import tpx as tp\nx = tp.ones((3, 3), requires_grad=True)\nh = x\n"
        "for _ in range(50):\n    h = (h * 0.5).sin()\nh.sum().backward()\n"
    )
    address = client.scheduler.address
    result = CliRunner().invoke(cli, ["check", str(script), "--json", "--only", "local,order",
                                      "--scheduler", address])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert '"local"' in result.stdout and '"accumulation"' not in result.stdout
    bad = CliRunner().invoke(cli, ["check", str(script), "--only", "local,bogus"])
    assert bad.exit_code == 2 and "bogus" in bad.output
