"""Regenerate the viewer screenshots in docs/ (shown in the README).

    .venv/bin/python -m tools.screenshots

(from the repository root: the traces are built by the viewer tests' own builders,
``tests.web.conftest``, so that the screenshots show what the tests check)

Captures examples/train_mlp.py (--quick) and a graph with a planted wrong rule, serves them on
127.0.0.1 and drives Debian's Chromium through Playwright.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.web.conftest import LAUNCH_ARGS, _model_trace, _wrong_rule_trace

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _serve(runs: Path):
    from tpx_inspect.server.app import create_app
    from tpx_inspect.server.serve import ServerThread, bind

    app = create_app([runs], web_dir=ROOT / "web")
    return ServerThread(app, bind("127.0.0.1", 0)).start()


def _shots(url: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 820})

        def open_(fragment: str, theme: str = "light") -> None:
            page.goto("about:blank")
            page.goto(f"{url}/#{fragment}")
            page.evaluate(f"() => localStorage.setItem('tpx-theme', '{theme}')")
            page.reload()
            page.wait_for_selector("body[data-ready][data-loaded]")
            page.wait_for_timeout(300)

        open_("run=model&graph=0")
        page.screenshot(path=DOCS / "viewer-collapsed.png")
        open_("run=model&graph=0&expand=model,model.1")
        mm = page.evaluate("() => window.tpxViewer.state.nodes.find(n => n.op === 'matmul').id")
        page.evaluate("(id) => window.tpxViewer.select(id)", mm)
        page.wait_for_timeout(400)
        page.screenshot(path=DOCS / "viewer-node-details.png")
        open_("run=model&graph=0&expand=model,model.1,model.2,model.3", theme="dark")
        page.select_option("#colour", "grad_norm")
        page.evaluate("() => window.tpxViewer.main.fit()")
        page.wait_for_timeout(300)
        page.screenshot(path=DOCS / "viewer-dark-grad-norm.png")
        open_("run=wrong-sin&graph=0")
        page.click("#checks")
        page.wait_for_function("() => window.tpxViewer.state.checked")
        page.wait_for_timeout(400)
        page.screenshot(path=DOCS / "viewer-checks-failing.png")
        browser.close()


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        for name, make in (("model", _model_trace), ("wrong-sin", _wrong_rule_trace)):
            (runs / name).mkdir()
            make(runs / name)
        server = _serve(runs)
        try:
            _shots(server.url.rstrip("/"))
        finally:
            server.stop()
    print(f"screenshots written to {DOCS}")


if __name__ == "__main__":
    main()
