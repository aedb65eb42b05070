"""The plan panel (issue 19): a tpx.compile plan stored with a run is shown beside the eager
graph it was recorded from; clicking a kernel selects the GradFn node it came from, and the
selected node marks its kernels. The page must log no error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _plan_trace(path: Path) -> dict:
    """An SGD step of a two-layer MLP under tpx.compile, captured with its plan."""
    import tpx as tp
    import tpx.optim as optim
    import tpx_inspect

    rng = np.random.default_rng(0)
    w1 = tp.asarray(rng.normal(size=(4, 8)).astype(np.float32), requires_grad=True)
    w2 = tp.asarray(rng.normal(size=(8, 3)).astype(np.float32), requires_grad=True)
    opt = optim.SGD([w1, w2], lr=0.1)

    def step(x: tp.Tensor) -> tp.Tensor:
        opt.zero_grad()
        loss = ((x @ w1).relu() @ w2).tanh().sum()
        loss.backward()
        opt.step()
        return loss

    trace = tpx_inspect.capture_plan(tp.compile(step), tp.ones((5, 4)), name="sgd-step")
    tpx_inspect.save(trace, str(path / "trace.json"))
    return trace.plans[0]


@pytest.fixture(scope="module")
def plan_site(tmp_path_factory) -> Iterator[tuple[str, dict]]:
    from tpx_inspect.server.app import create_app
    from tpx_inspect.server.serve import ServerThread, bind

    root = tmp_path_factory.mktemp("plan-runs")
    (root / "compiled").mkdir()
    plan = _plan_trace(root / "compiled")
    thread = ServerThread(create_app([root], web_dir=ROOT / "web"), bind("127.0.0.1", 0))
    thread.start()
    yield thread.url.rstrip("/"), plan
    thread.stop(timeout=10)


def test_plan_panel_links_kernels_and_nodes(browser, plan_site) -> None:
    base, plan = plan_site
    context = browser.new_context(viewport={"width": 1400, "height": 850})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{base}/")
        page.wait_for_selector("body[data-ready][data-loaded][data-plan-ready='1']", timeout=20_000)
        assert page.is_hidden("#plan-panel")
        page.click("#plan")
        page.wait_for_selector("#plan-panel li", timeout=5_000)
        rows = page.eval_on_selector_all("#plan-panel li", "ls => ls.map(l => l.textContent)")
        assert len(rows) == len(plan["kernels"])
        assert "sgd-step" in page.inner_text("#plan-panel h2")
        # the SGD step lowered into the plan: labelled with optimizer, group, param; no node
        steps = page.eval_on_selector_all(
            "#plan-panel li.optimizer", "ls => ls.map(l => l.textContent)"
        )
        assert steps and all("SGD group 0 param" in t and "optimizer" in t for t in steps), steps
        assert (
            page.eval_on_selector_all("#plan-panel li.optimizer[data-node]", "ls => ls.length") == 0
        )
        # a backward kernel -> its GradFn node is selected in the graph and shown in the panel
        k = next(k for k in plan["kernels"] if k["phase"] == "backward" and k["node_id"])
        page.click(f"#plan-panel li[data-kernel='{k['index']}']")
        page.wait_for_function(
            f"() => window.tpxViewer.state.selected === {k['node_id']}", timeout=5_000
        )
        page.wait_for_function(  # the node's details: "#5 tanh" for TanhBackward #5
            f"() => document.querySelector('#panel h2')?.textContent"
            f".startsWith('#{k['node_id']} ')",
            timeout=5_000,
        )
        op = k["node"].removesuffix("Backward").lower()
        assert op in page.inner_text("#panel h2").replace("_", "").lower()
        # ... and every kernel of that node is marked, none of another node
        page.wait_for_selector("#plan-panel li.marked", timeout=5_000)
        marked = page.eval_on_selector_all(
            "#plan-panel li.marked", "ls => ls.map(l => Number(l.dataset.node))"
        )
        expected = [q for q in plan["kernels"] if q["node_id"] == k["node_id"]]
        assert set(marked) == {k["node_id"]} and len(marked) == len(expected)
        # the plan sits beside the graph: both visible, side by side
        canvas = page.locator("#canvas").bounding_box()
        side = page.locator("#plan-panel").bounding_box()
        assert canvas["width"] > 200 and side["x"] >= canvas["x"] + canvas["width"] - 1
    finally:
        context.close()
    assert errors == [], errors


def test_plans_endpoint_answers_the_stored_plan(plan_site) -> None:
    import json
    import urllib.request

    base, plan = plan_site
    with urllib.request.urlopen(f"{base}/api/runs/compiled/plans") as r:
        body = json.loads(r.read())
    (got,) = body["plans"]
    assert got["name"] == "sgd-step" and len(got["kernels"]) == len(plan["kernels"])
    assert got["peak_bytes"] <= got["eager_peak_bytes"]
