"""Fixtures for the viewer tests: real traces, a real server on 127.0.0.1, headless Chromium."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]


def _model_trace(path: Path) -> None:
    """Two training steps of a small scoped MLP with a residual edge spanning many levels."""
    import tpx as tp
    import tpx.nn as nn
    import tpx_inspect
    from tpx.nn import functional as F

    tp.manual_seed(0)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(8, 8)
            self.fc2 = nn.Linear(8, 8)

        def forward(self, x):
            return self.fc2(self.fc1(x).tanh()).relu() + x

    model = nn.Sequential(nn.Linear(4, 8), Block(), Block(), Block(), nn.Linear(8, 3))
    x = tp.randn((5, 4))
    y = tp.asarray([0, 1, 2, 1, 0])
    with tpx_inspect.capture(name="model", params=model.named_parameters()) as cap:
        for _ in range(2):
            model.zero_grad()
            h = model(x)
            loss = F.cross_entropy(h, y) + (h.sum() * 0.0 + x.sum() * 0.0)
            loss.backward()
            with tp.no_grad():
                for p in model.parameters():
                    p -= p.grad * 0.5
    tpx_inspect.save(cap.trace, str(path / "trace.json"))


def _wrong_rule_trace(path: Path) -> None:
    """A graph whose ``sin`` rule is planted wrong (sin' = sin) while it is recorded."""
    import p10
    import tpx as tp
    import tpx_inspect

    handle = tp.register_rule(p10.Op.SIN, lambda ctx, g: (g * p10.sin(ctx.inputs[0]),), save=(0,))
    try:
        with tpx_inspect.capture(name="wrong-sin") as cap:
            x = tp.asarray([[0.3, 1.2], [-0.7, 2.0]], dtype="float64", requires_grad=True)
            (x.exp().sin() * 2.0).sum().backward()
    finally:
        handle.remove()
    tpx_inspect.save(cap.trace, str(path / "trace.json"))


def _wide_trace(path: Path) -> None:
    """A value of 720 elements: more than one page of the node detail (256)."""
    import tpx as tp
    import tpx_inspect

    tp.manual_seed(0)
    with tpx_inspect.capture(name="wide") as cap:
        x = tp.randn((24, 30), requires_grad=True)
        (x.tanh() * 2.0).sum().backward()
    tpx_inspect.save(cap.trace, str(path / "trace.json"))


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for name, make in (
        ("model", _model_trace),
        ("wrong-sin", _wrong_rule_trace),
        ("wide", _wide_trace),
    ):
        (root / name).mkdir()
        make(root / name)
    return root


@pytest.fixture(scope="session")
def server(runs_dir: Path) -> Iterator[str]:
    from tpx_inspect.server.app import create_app
    from tpx_inspect.server.serve import ServerThread, bind

    thread = ServerThread(create_app([runs_dir], web_dir=ROOT / "web"), bind("127.0.0.1", 0))
    thread.start()
    yield thread.url.rstrip("/")
    thread.stop(timeout=10)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is missing: run `make setup` (tools/install_system_deps.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield b
        b.close()


class Viewer:
    """A page of the viewer plus the console errors it produced."""

    def __init__(self, page, base: str) -> None:
        self.page = page
        self.base = base
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, fragment: str = "") -> Viewer:
        self.page.goto("about:blank")
        self.page.goto(f"{self.base}/{('#' + fragment) if fragment else ''}")
        self.page.wait_for_selector("body[data-ready][data-loaded]", timeout=20_000)
        return self

    def state(self, expr: str):
        return self.page.evaluate(f"() => {{ const s = window.tpxViewer.state; return {expr}; }}")

    def wait(self, predicate: str, timeout: float = 10_000) -> None:
        self.page.wait_for_function(
            f"() => {{ const s = window.tpxViewer.state; return {predicate}; }}", timeout=timeout
        )

    def status(self) -> str:
        return self.page.inner_text("#status")


@pytest.fixture
def viewer(browser, server) -> Iterator[Viewer]:
    context = browser.new_context(viewport={"width": 1400, "height": 850}, accept_downloads=True)
    page = context.new_page()
    v = Viewer(page, server)
    yield v
    context.close()
    assert v.errors == [], f"console errors: {v.errors}"
