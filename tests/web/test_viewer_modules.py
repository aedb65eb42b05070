"""The page's module list: index.html preloads every module main.js reaches, so a cold page
fetches them at once instead of one import level at a time (no browser needed)."""

from __future__ import annotations

import re
from pathlib import Path

WEB = Path(__file__).resolve().parents[2] / "web"
IMPORT = re.compile(r'^(?:import|export)\s+[\w\s{},*]+?\s+from\s+"\./([\w.-]+)"', re.M)


def reached(entry: str) -> set[str]:
    """Every module imported from ``entry``, transitively (an explicit stack, no recursion)."""
    seen: set[str] = set()
    stack = [entry]
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack += IMPORT.findall((WEB / "js" / name).read_text())
    return seen


def test_index_preloads_every_module_main_imports():
    html = (WEB / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="js/([\w.-]+)">', html))
    assert reached("main.js") - {"main.js"} == preloaded
    assert 'src="js/main.js"' in html


def test_import_scan_sees_a_known_chain():
    assert {"app.js", "graph-view.js", "spatial.js"} <= reached("main.js")
