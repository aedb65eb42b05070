"""TPX training steps on a real 2-worker Dask cluster (127.0.0.1, worker processes, small
memory limits), started once for the module and always closed.

What is counted, with a scheduler plugin (see ``dask_cluster``): the graphs sent to the
scheduler (one per compute or persist) and how often each task ran. A step of
``backward``, ``optimizer.step`` and ``tp.materialize`` sends one graph, runs each of its
tasks exactly once (no forward task runs twice), and leaves the gradients lazy, chunked like
their inputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")
pytest.importorskip("array_api_compat")

import p10  # noqa: E402
import tpx as tp  # noqa: E402
import tpx.nn as nn  # noqa: E402
import tpx.optim as optim  # noqa: E402
from p10.backends import dask_extras  # noqa: E402
from tests.backends import dask_cluster  # noqa: E402

ROWS, FEATURES, HIDDEN, CHUNK = 512, 32, 16, 128  # 4 row chunks


@pytest.fixture(scope="module")
def cluster() -> Iterator[dask_cluster.TaskCounter]:
    cl, client, counter = dask_cluster.start()
    try:
        with p10.use_backend("dask"):
            yield counter
    finally:
        client.close()
        cl.close()


def _data(seed: int, cols: int) -> Any:
    """A chunked dataset made on the workers (never on the client)."""
    rng = da.random.default_rng(seed)
    arr = rng.standard_normal((ROWS, cols), chunks=(CHUNK, cols)).astype(np.float32)
    return tp.asarray(dask_extras.from_dask(arr))


def _model() -> nn.Module:
    tp.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))


def _step(model: nn.Module, opt: optim.Optimizer, x: Any, y: Any) -> Any:
    opt.zero_grad()
    loss = (model(x) - y).square().mean()
    loss.backward()
    opt.step()
    tp.materialize(loss, model, opt)
    return loss


def _state(opt: optim.Optimizer) -> list[Any]:
    return [v for s in opt.state.values() for v in s.values() if isinstance(v, tp.Tensor)]


def _train(x: Any, y: Any, steps: int, cluster: Any = None) -> tuple[list, np.ndarray, tuple]:
    """Adam steps on (x, y): the losses, a weight, and with ``cluster`` the last step's
    graphs sent, tasks run and most runs of one task."""
    model = _model()
    opt = optim.Adam(model.parameters(), lr=0.01)
    tp.materialize(model)
    losses, counts = [], ()
    for i in range(steps):
        if cluster is not None and i == steps - 1:  # the first step also makes Adam's state
            dask_cluster.settle(*model.parameters(), *_state(opt))
            cluster.reset()
        loss = _step(model, opt, x, y)
        if cluster is not None and i == steps - 1:
            dask_cluster.settle(loss, *model.parameters(), *_state(opt))
            counts = (list(cluster.graphs), cluster.executed, cluster.most_runs)
        losses.append(loss.item())
    return losses, np.array(model[0].weight.numpy()), counts


def test_a_step_sends_one_graph_and_runs_each_task_once(cluster: Any) -> None:
    x, y = _data(1, FEATURES), _data(2, 1)
    with dask_cluster.scheduler_warnings() as warnings:
        losses, weight, (graphs, executed, most_runs) = _train(x, y, 2, cluster)
    assert len(graphs) == 1, f"graphs sent in one step: {graphs}"
    assert most_runs == 1, "a task ran twice in one step"
    assert executed == graphs[0], f"{executed} tasks ran for a graph of {graphs[0]}"
    assert executed > 2 * (ROWS // CHUNK)  # the step's tasks did run on the cluster
    # the same steps on NumPy give the same numbers
    xs, ys = p10.fetch(x.p10, y.p10)
    with p10.use_backend("numpy"):
        expect, expect_weight, _ = _train(tp.asarray(xs), tp.asarray(ys), 2)
    np.testing.assert_allclose(losses, expect, rtol=1e-5)
    np.testing.assert_allclose(weight, expect_weight, rtol=1e-4, atol=1e-6)
    # NOTE: the steps read the same dataset chunks: fused tasks named after them were sent
    # with different definitions ("Detected different run_spec for key")
    assert not [m for m in warnings if "run_spec" in m], warnings


def test_leaf_gradients_stay_lazy_with_the_input_chunks(cluster: Any) -> None:
    x = _data(5, FEATURES)
    x.requires_grad_(True)
    w = tp.asarray(dask_extras.from_dask(da.ones((FEATURES, 1), dtype=np.float32)))
    w.requires_grad_(True)
    cluster.reset()
    ((x @ w).tanh() * x[:, :1]).sum().backward()
    assert cluster.graphs == [], "backward computed something"
    for t in (x, w):
        data = t.grad.p10._data
        assert isinstance(data, da.Array)
        assert data.chunks == t.p10._data.chunks
    tp.materialize(x, w)
    dask_cluster.settle(x.grad, w.grad)
    assert len(cluster.graphs) == 1, cluster.graphs
    xs = x.numpy().astype(np.float64)
    expect = xs.T @ ((1 - np.tanh(xs.sum(axis=1, keepdims=True)) ** 2) * xs[:, :1])
    np.testing.assert_allclose(w.grad.numpy(), expect, rtol=1e-4, atol=1e-4)


def _captured_step(x: Any, y: Any) -> tuple[Any, Any]:
    import tpx_inspect

    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    with tpx_inspect.capture("all", timing=False) as cap:
        loss = _step(model, opt, x, y)
    return cap.trace.graphs[0], loss


@pytest.mark.slow
def test_capture_makes_at_most_two_computes_per_step(cluster: Any) -> None:
    x, y = _data(8, FEATURES), _data(9, 1)
    cluster.reset()
    graph, loss = _captured_step(x, y)
    dask_cluster.settle(loss)
    assert 1 <= len(cluster.graphs) <= 2, f"graphs sent in a captured step: {cluster.graphs}"
    assert len(graph.nodes) > 8
    # the summaries are those of the same step captured on NumPy
    xs, ys = p10.fetch(x.p10, y.p10)
    with p10.use_backend("numpy"):
        expect, _ = _captured_step(tp.asarray(xs), tp.asarray(ys))
    np.testing.assert_allclose(
        graph.tables.summaries, expect.tables.summaries, rtol=1e-4, atol=1e-6, equal_nan=True
    )
    np.testing.assert_allclose(
        graph.tables.previews, expect.tables.previews, rtol=1e-5, atol=1e-6, equal_nan=True
    )


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_lazy_summaries_equal_numpy_ones(dtype: str) -> None:
    from tpx_inspect import _lazy
    from tpx_inspect.summary import stats_row

    rng = np.random.default_rng(0)
    a = (rng.standard_normal(6000) * 3).astype(dtype)
    if dtype == "float32":
        a[[5, 70, 900]] = [np.nan, np.inf, -np.inf]
        a[[1, 2]] = 0.0
    t = p10.asarray(a, backend="dask")
    (got,) = _lazy.summarize_lazy([t], lambda v: False, lambda *f: f).values()
    row, head = stats_row(a)
    np.testing.assert_allclose(got[0], row, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(got[1], head)


@pytest.mark.slow
def test_connect_at_a_scripts_top_level_says_to_add_the_main_guard(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(
        "from p10.backends import dask_extras\n"
        "client = dask_extras.connect(n_workers=1, threads_per_worker=1)\n"
        "dask_extras.close(client)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode != 0
    assert 'start the cluster under if __name__ == "__main__":' in done.stderr


def test_materialize_and_fetch_keep_values_and_reject_other_objects() -> None:
    a = p10.asarray(np.arange(6.0).reshape(2, 3), backend="dask")
    b = a * 2 + 1
    graph_before = b._data.__dask_graph__()
    p10.materialize(a, b)
    assert isinstance(b._data, da.Array) and b._data.__dask_graph__() is not graph_before
    np.testing.assert_array_equal(p10.fetch(b)[0], np.arange(6.0).reshape(2, 3) * 2 + 1)
    with pytest.raises(TypeError, match="materialize: cannot compute a int"):
        tp.materialize(tp.ones(2), 3)
    with pytest.raises(TypeError, match="argument 0 is a list"):
        p10.fetch([1.0])


@pytest.mark.slow
def test_the_example_trains_on_the_cluster(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    example = os.path.join(root, "examples", "train_on_dask.py")
    args = ["--data-gb", "0.01", "--worker-memory", "384MB", "--steps", "3", "--chunk-mb", "2"]
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run(
        [sys.executable, example, *args], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [
        float(line.split()[3].rstrip(","))
        for line in done.stdout.splitlines()
        if line.startswith("step ")
    ]
    assert len(losses) == 3 and losses[2] < losses[0]
    assert "peak memory: client" in done.stdout
