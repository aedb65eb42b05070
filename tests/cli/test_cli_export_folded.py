"""``tpx-inspect export`` of a large graph writes its view model: repeated blocks folded into
one "×N" box, parameters inside their blocks, no stub per parameter use."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import tpx as tp
import tpx_inspect
from tpx_inspect.cli import cli
from tpx_inspect.export.render import graphviz_available


@pytest.fixture(scope="module")
def blocks_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("blocks") / "run"
    tp.manual_seed(0)
    x = tp.randn((2, 4), requires_grad=True)
    ws = [tp.randn((4, 4), requires_grad=True) for _ in range(30)]
    with tpx_inspect.capture(values="none") as cap:
        h = x
        for b, w in enumerate(ws):
            with tp.scope(f"model.blocks.{b}"):
                h = h @ w
                for _ in range(10):
                    h = (h * 0.5).tanh()
        h.sum().backward()
    folder.mkdir(parents=True)
    cap.save(str(folder / "trace.json"))
    return folder, len(cap.trace.graphs[0].nodes)


def test_export_dot_of_a_large_graph_is_the_folded_view(blocks_run, tmp_path):
    run, nodes = blocks_run
    out = tmp_path / "g.dot"
    result = CliRunner().invoke(cli, ["export", str(run), "--format", "dot", "-o", str(out)])
    assert result.exit_code == 0, result.output
    dot = out.read_text()
    assert nodes > 600 and "blocks.0-29 ×30" in dot
    assert dot.count("->") < 20 and "from " not in dot.split("blocks.0-29")[0]


def test_export_svg_of_a_large_graph(blocks_run, tmp_path):
    if not graphviz_available():
        pytest.skip("Graphviz binaries not installed")
    run, _ = blocks_run
    out = tmp_path / "g.svg"
    result = CliRunner().invoke(cli, ["export", str(run), "--format", "svg", "-o", str(out)])
    assert result.exit_code == 0, result.output
    svg = out.read_text()
    assert "blocks.0&#45;29 ×30" in svg  # Graphviz writes "-" as &#45;
