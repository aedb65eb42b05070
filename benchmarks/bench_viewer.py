"""Viewer benchmark: open a 20,000-node trace in headless Chromium and time the first render
and the expansion of one scope (goal: at most 2 s each).

The trace is a synthetic scoped model (blocks of layers, every op recorded), captured with
tpx_inspect, served by the real server on 127.0.0.1; times are measured in the page, from
navigation to the first frame drawn, and from the expand request to the next frame.

    .venv/bin/python benchmarks/run.py viewer
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "web"))

from conftest import LAUNCH_ARGS  # noqa: E402  (one definition of the Chromium flags)


def build_trace(folder: Path, blocks: int = 40, layers: int = 21, ops: int = 24) -> int:
    """Capture one backward of a scoped chain model; returns its node count."""
    import tpx as tp
    import tpx_inspect

    tp.manual_seed(0)
    x = tp.randn((4, 8), requires_grad=True)
    weights = [tp.randn((8, 8), requires_grad=True) for _ in range(blocks)]
    with tpx_inspect.capture(name="big", values="none") as cap:
        h = x
        for b in range(blocks):
            with tp.scope(f"model.blocks.{b}"):
                for layer in range(layers):
                    with tp.scope(f"layer{layer}"):
                        h = h @ weights[b] * 0.1
                        for _ in range(ops // 2 - 1):
                            h = (h * 0.5).tanh()
        h.sum().backward()
    tpx_inspect.save(cap.trace, str(folder / "trace.json"))
    return len(cap.trace.graphs[0].nodes)


def _serve(runs: Path):
    from tpx_inspect.server.app import create_app
    from tpx_inspect.server.serve import ServerThread, bind

    app = create_app([runs], web_dir=ROOT / "web")
    return ServerThread(app, bind("127.0.0.1", 0)).start()


def measure(url: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 850})
        t0 = time.perf_counter()
        page.goto(url + "/#run=big&graph=0")
        page.wait_for_function(
            "() => Number(document.getElementById('canvas').dataset.frame) > 0 "
            "&& document.body.dataset.ready"
        )
        first = time.perf_counter() - t0
        boxes = page.evaluate("() => window.tpxViewer.state.view.nodes.length")
        page.wait_for_selector("body[data-loaded]")
        # Open the model down to its 40 blocks: the expansion a person makes first.
        scope = "model.blocks"
        page.evaluate("() => window.tpxViewer.state.expanded.add('model')")
        frame = page.evaluate("() => Number(document.getElementById('canvas').dataset.frame)")
        t1 = time.perf_counter()
        page.evaluate("(s) => window.tpxViewer.toggle(s)", scope)
        page.wait_for_function("(s) => document.body.dataset.ready.endsWith(s)", arg=scope)
        page.wait_for_function(
            "(f) => Number(document.getElementById('canvas').dataset.frame) > f", arg=frame
        )
        expand = time.perf_counter() - t1
        expanded_boxes = page.evaluate("() => window.tpxViewer.state.view.nodes.length")
        render_ms = page.evaluate("() => window.tpxViewer.main.lastRenderMs")
        page.evaluate("() => window.tpxViewer.main.fit()")
        page.wait_for_timeout(200)
        fit_ms = page.evaluate("() => window.tpxViewer.main.lastRenderMs")
        browser.close()
    return {"first": first, "expand": expand, "boxes": boxes, "expanded_boxes": expanded_boxes,
            "render_ms": render_ms, "fit_render_ms": fit_ms}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        (runs / "big").mkdir()
        t = time.perf_counter()
        n = build_trace(runs / "big")
        print(f"trace: {n} nodes, captured and saved in {time.perf_counter() - t:.2f} s")
        server = _serve(runs)
        try:
            r = measure(server.url.rstrip("/"))
        finally:
            server.stop(timeout=10)
    print(f"first render (navigation -> first frame, {r['boxes']} boxes): {r['first']:.2f} s "
          f"(goal <= 2 s)")  # fmt: skip
    print(f"expand one scope ({r['expanded_boxes']} boxes after): {r['expand']:.2f} s "
          f"(goal <= 2 s)")  # fmt: skip
    print(f"canvas frame: {r['render_ms']:.1f} ms; whole graph fitted: {r['fit_render_ms']:.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
