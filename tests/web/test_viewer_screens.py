"""Screenshot for docs/ (issue 14): the first screen of examples/tiny_transformer.py's graph,
readable at Fit; the test asserts what the picture should show before saving it. The picture
goes to the test's tmp folder; ``TPX_UPDATE_SCREENSHOTS=1`` writes it to docs/ instead (so that
a test run leaves the checkout as it was).
(docs/viewer-100k.png comes from ``benchmarks/run.py viewer``: its 100,000-node trace takes
minutes to capture, too long for the test suite.)"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.load import load_example

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow
DOCS = ROOT / "docs"


def _example_trace(folder: Path) -> None:
    """One training step of the example's model, captured with its parameter names."""
    import numpy as np

    import tpx.nn.functional as F
    import tpx_inspect

    ex = load_example("tiny_transformer")
    ids, vocab = ex.load_text()
    model = ex.build_model(len(vocab), 32, seed=0)
    x, y = ex.sample_batch(ids, 4, 32, np.random.default_rng(0))
    with tpx_inspect.capture(name="tiny_transformer", params=model.named_parameters()) as cap:
        logits = model(x)
        F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1)).backward()
    (folder / "tiny-transformer").mkdir()
    tpx_inspect.save(cap.trace, str(folder / "tiny-transformer" / "trace.json"))


@pytest.fixture(scope="module")
def screens_server(tmp_path_factory) -> Iterator[str]:
    from tpx_inspect.server.app import create_app
    from tpx_inspect.server.serve import ServerThread, bind

    root = tmp_path_factory.mktemp("screens")
    _example_trace(root)
    thread = ServerThread(create_app([root], web_dir=ROOT / "web"), bind("127.0.0.1", 0))
    thread.start()
    yield thread.url.rstrip("/")
    thread.stop(timeout=10)


def _open(viewer, base: str, fragment: str):
    viewer.base = base
    viewer.page.goto(f"{base}/#{fragment}")
    viewer.page.wait_for_selector("body[data-interactive]", timeout=60_000)
    viewer.page.wait_for_timeout(300)
    return viewer


def test_tiny_transformer_first_screen_reads_at_fit(viewer, screens_server, tmp_path):
    v = _open(viewer, screens_server, "run=tiny-transformer&graph=0")
    m = "window.tpxViewer.main"
    drawn, labelled = v.page.evaluate(f"() => [{m}.drawnNodes, {m}.labelled]")
    assert drawn >= 5 and labelled >= 0.8 * drawn  # labels legible at Fit
    boxes = v.state("s.view.nodes.map(b => b.id)")
    assert any(b.startswith("r:") or b.startswith("s:") for b in boxes)  # blocks, not one box
    folder = DOCS if os.environ.get("TPX_UPDATE_SCREENSHOTS") == "1" else tmp_path
    v.page.screenshot(path=str(folder / "viewer-transformer.png"))
    assert (folder / "viewer-transformer.png").stat().st_size > 10_000
