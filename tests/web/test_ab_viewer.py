"""The pair that ``tpx-inspect ab -o`` saves opens in the viewer's compare mode: B's graph
compared with A's, nodes coloured by difference, the first divergence selected, its override
listed, and a memory lane of saved bytes over the backward order for both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """\
import p10
import tpx as tp

p10.manual_seed(0)
w = tp.asarray(p10.randn((4, 3)), requires_grad=True)
x = p10.randn((8, 4))
with tp.scope("layer"):
    h = (x @ w).tanh()
(h * h).mean().backward()
"""

RULES = """\
import tpx as tp


def _from_input(ctx, g):
    t = tp.tanh(ctx.inputs[0])
    return (g * 2.0 - g * t * t,)  # planted wrong


wrong_tanh_saving_input = tp.Rule(_from_input, save=(0,), save_output=False)
"""


@pytest.fixture(scope="module")
def ab_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    from tpx_inspect._cli_ab import _save
    from tpx_inspect.ab import parse_override, run_ab

    root = tmp_path_factory.mktemp("ab")
    (root / "step.py").write_text(SCRIPT)
    (root / "ab_viewer_rules.py").write_text(RULES)
    rule = parse_override("rule", f"tanh={root / 'ab_viewer_rules.py'}:wrong_tanh_saving_input")
    report = run_ab(str(root / "step.py"), [], [rule], steps="all", values="all")
    _save(report, root / "pair")
    return root / "pair", report


@pytest.fixture(scope="module")
def server(ab_pair) -> Iterator[str]:
    from tpx_inspect.server.app import create_app
    from tpx_inspect.server.serve import ServerThread, bind

    thread = ServerThread(create_app([ab_pair[0]], web_dir=ROOT / "web"), bind("127.0.0.1", 0))
    thread.start()
    yield thread.url.rstrip("/")
    thread.stop(timeout=10)


def test_ab_pair_opens_compared_at_the_first_divergence(viewer, ab_pair):
    from tpx_inspect._cli_ab import viewer_link

    report = ab_pair[1]
    first = report.first
    assert first is not None and first.op == "tanh"
    v = viewer.open(viewer_link(report))
    v.page.wait_for_selector("body[data-compared='overlay']", timeout=20_000)
    v.wait(f"s.diff !== null && s.selected === {first.node_b}")
    assert "compare=a%2F0" in v.page.url
    assert v.state("s.run") == "b" and v.state("s.compare.run") == "a"
    v.page.wait_for_selector("#panel h2")
    panel = v.page.inner_text("#panel")
    assert "overridden" in panel and "wrong_tanh_saving_input" not in panel
    assert "rule ab_viewer_rules:_from_input" in panel
    lane = v.page.locator("#memory-lane")
    assert lane.is_visible() and lane.locator("polyline").count() == 2
    assert "overrides here: rule of tanh: ab_viewer_rules:_from_input (1 node)" in lane.inner_text()
    # B (this graph) saves tanh's input, A its output: the same bytes per node, but A's output
    # is the buffer that the next op saves too, so A's peak is lower
    step = report.steps[0]
    assert int(lane.get_attribute("data-total-a")) == sum(n.saved_bytes_b for n in step.nodes)
    assert int(lane.get_attribute("data-total-b")) == sum(n.saved_bytes_a for n in step.nodes)
    assert int(lane.get_attribute("data-peak-a")) == step.peak_saved_bytes_b
    assert int(lane.get_attribute("data-peak-b")) == step.peak_saved_bytes_a
    assert step.peak_saved_bytes_b > step.peak_saved_bytes_a
