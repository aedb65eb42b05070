"""Viewer benchmark (issue 14): the viewer in headless Chromium on big traces, served by the
real server on 127.0.0.1, timed in the page.

Traces (``benchmarks/viewer_traces.py``): a transformer-like model of repeated scoped blocks at
20,000 and 100,000 nodes, and micrograd's moons MLP on scalars with no scopes (14,000 nodes).
Each trace gets a fresh server serving it alone, so the first open is cold (the server reads
the trace and builds its view model); the page is then opened again (warm). For each:

- readable first frame: the first frame drawn at Fit, and the share of drawn boxes showing
  their label (readable: at least 80 %), goal <= 1.5 s, cold and warm;
- interactive: a search typed at once answers with a hit count (not "loading"), goal <= 2 s;
- where that time went, from the page's performance timeline: waiting on the server, transfer,
  the page itself (the layout worker's requests included);
- expanding the biggest folded box until its frame is drawn, goal <= 0.3 s (request, worker,
  page split);
- ``tpx-inspect export --format svg`` of the 20k and the unscoped graph, goal <= 5 s (wall);
- the page's longest task (performance timeline, long-task observer) from navigation until the
  group tree is in place, goal: none over 50 ms;
- on the 100k graph: Expand all (its first frame: small frames as blocks; then, zoomed to 1,
  the region about the middle; the page's longest task meanwhile) and, fully expanded, the
  frame time while panning (render + rasterization, p95, at Fit and at zoom 1), goal
  <= 33 ms, beside the interval between animation frames.

It ends with one table of every must-show figure and its goal.

    .venv/bin/python benchmarks/run.py viewer
    BENCH_VIEWER_SIZES=20000 .venv/bin/python benchmarks/run.py viewer   # one size only
    BENCH_VIEWER_TRACES=/tmp/traces ...     # traces written once into that folder, then reused
    TPX_UPDATE_SCREENSHOTS=1 ...            # also rewrite docs/viewer-100k.png
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run alone too: the checkout's benchmarks and tests packages

from tests.web.conftest import LAUNCH_ARGS  # noqa: E402  (one definition of the Chromium flags)

GOALS = {"first": 1.5, "interactive": 2.0, "expand": 0.3, "pan_ms": 33.0}
WAIT_MS = 120_000


def build(folder: Path, sizes: list[int]) -> list[tuple[str, int]]:
    """Write the traces (or reuse those already in ``folder``); (run id, node count) for each."""
    from benchmarks.viewer_traces import WRITTEN_BY, scalar_mlp_trace, transformer_trace

    makers = [(f"transformer-{n}", transformer_trace, n) for n in sizes]
    makers.append(("scalar-mlp-14000", scalar_mlp_trace, 14_000))
    out = []
    for name, make, n in makers:
        count_file, how_file = folder / name / "nodes.txt", folder / name / "written-by.txt"
        if count_file.exists():
            how = how_file.read_text() if how_file.exists() else "an older bench (trace only)"
            print(f"trace {name}: reused, written by {how}", flush=True)
            out.append((name, int(count_file.read_text())))
            continue
        t = time.perf_counter()
        run, count = make(folder, nodes=n)
        count_file.write_text(str(count))
        how_file.write_text(WRITTEN_BY)
        took = time.perf_counter() - t
        print(f"trace {run.name}: {count} nodes in {took:.1f} s, written by {WRITTEN_BY}")
        out.append((run.name, count))
    return out


def _serve(runs: Path):
    from tpx_inspect.server.app import create_app
    from tpx_inspect.server.serve import ServerThread, bind

    return ServerThread(create_app([runs], web_dir=ROOT / "web"), bind("127.0.0.1", 0)).start()


def open_graph(page, url: str, run: str, query: str) -> dict:
    """Navigate, time the first frame and its labels, then the first search answer."""
    t0 = time.perf_counter()
    page.goto(f"{url}/#run={run}&graph=0")
    page.wait_for_function(
        "() => Number(document.getElementById('canvas').dataset.frame) > 0 "
        "&& document.body.dataset.ready",
        timeout=WAIT_MS,
    )
    first = time.perf_counter() - t0
    drawn = page.evaluate("() => window.tpxViewer.main.drawnNodes")
    labelled = page.evaluate("() => window.tpxViewer.main.labelled")
    page.fill("#search", query)
    page.wait_for_function(
        "() => /^\\d+ hits$/.test(document.getElementById('hits').textContent)", timeout=WAIT_MS
    )
    interactive = time.perf_counter() - t0
    hits = page.inner_text("#hits")
    page.fill("#search", "")
    return {"first": first, "drawn": drawn, "labelled": labelled, "interactive": interactive,
            "hits": hits}  # fmt: skip


TIMELINE_JS = """() => {
  const first = (name) => performance.getEntriesByName(name, 'mark')[0]?.startTime ?? null;
  const nav = performance.getEntriesByType('navigation')[0];
  const api = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/'))
    .map((e) => [e.startTime, e.requestStart || e.startTime, e.responseStart || e.responseEnd,
                 e.responseEnd])
    .concat(window.tpxViewer.measure.workerRequests()
      .map((r) => [r.start, r.sent, r.first, r.end]));
  return {dom: nav ? nav.domContentLoadedEventEnd : 0, first: first('tpx:first-frame'),
          hits: first('tpx:hits'), api};
}"""


def _union(spans: list[tuple[float, float]], until: float) -> float:
    """Total length of the union of [a, b) intervals cut at ``until``."""
    total, reach = 0.0, 0.0
    for a, b in sorted((a, min(b, until)) for a, b in spans if a < until):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def timeline(page) -> dict:
    """Where the time to the first frame and to the first search answer went, from the page's
    performance timeline: waiting on the server (request sent .. first byte, its queue
    included), transfer (first .. last byte, beyond the waits), and the page itself (HTML and
    scripts, decoding, indexing, drawing: the rest). Milliseconds from navigation."""
    t = page.evaluate(TIMELINE_JS)
    out = {"dom": t["dom"]}
    for key in ("first", "hits"):
        until = t[key]
        if until is None:
            continue
        server = _union([(r[1], r[2]) for r in t["api"]], until)
        network = _union([(r[0], r[3]) for r in t["api"]], until)
        out[key] = {"at": until, "server": server, "transfer": network - server,
                    "page": until - network}  # fmt: skip
    return out


def requests(page) -> str:
    """How long the page's API requests took (ms), slowest first: where the time went."""
    spans = page.evaluate(
        "() => performance.getEntriesByType('resource')"
        ".filter(e => e.name.includes('/api/')).map(e => [e.name, e.duration])"
    )
    short = [
        (re.sub(r"^.*/api/(runs/[^/]+/graphs/\d+/?)?", "", n).split("?")[0], ms) for n, ms in spans
    ]
    short.sort(key=lambda s: -s[1])
    return ", ".join(f"{name or 'graph'} {ms:.0f}" for name, ms in short[:4])


# Tasks of the page's main thread over 50 ms (the page does not answer meanwhile), in ms.
LONG_TASKS_JS = """window.__longTasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longTasks.push(e.duration);
}).observe({ type: "longtask", buffered: true });"""


def measure(browser, url: str, run: str, full: bool) -> dict:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("pageerror", lambda e: print(f"  page error: {e}", flush=True))
    page.add_init_script(LONG_TASKS_JS)
    query = "matmul" if "transformer" in run else "relu"
    r: dict = {}
    try:
        # cold: the server reads the trace and builds its view model; warm: opened again
        r["cold"] = open_graph(page, url, run, query)
        r["cold"]["requests"] = requests(page)
        r["cold"]["timeline"] = timeline(page)
        page.goto("about:blank")
        r.update(open_graph(page, url, run, query))
        r["requests"] = requests(page)
        r["timeline"] = timeline(page)
        page.wait_for_selector("body[data-interactive]", timeout=WAIT_MS)
        # the group tree (asked when idle on a big graph) parsed and packed by the worker: the
        # page's longest task from navigation until it is in place
        page.wait_for_function("() => window.tpxViewer.state.tree", timeout=WAIT_MS)
        r["open_longest"] = page.evaluate("() => Math.max(0, ...window.__longTasks)")
        r["expand"] = page.evaluate("() => window.tpxViewer.measure.expandOne()")
        if full:
            page.evaluate("() => { window.__longTasks = []; }")
            r["expand_all"] = page.evaluate("() => window.tpxViewer.measure.expandAll()")
            r["expand_all"]["longest_task"] = page.evaluate(
                "() => Math.max(0, ...window.__longTasks)"
            )
            page.evaluate("() => window.tpxViewer.measure.fitView()")
            r["pan_fit"] = page.evaluate("() => window.tpxViewer.measure.panFrames(60, 40)")
            r["pan_1"] = page.evaluate("() => window.tpxViewer.measure.panFrames(60, 40, 1)")
            page.evaluate("() => { window.__longTasks = []; }")
            r["screenshot"] = screenshot(page)
    except Exception as err:  # a step that fails or times out is reported, not hidden
        r["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
    finally:
        page.close()
    return r


def screenshot(page) -> Path:
    """docs/viewer-100k.png (with TPX_UPDATE_SCREENSHOTS=1): the fully expanded graph at a
    readable zoom about its middle (frames round the expanded blocks), with a search's hits
    ringed and the minimap showing where the view is."""
    page.evaluate(
        "() => { window.tpxViewer.main.fit(); return window.tpxViewer.measure.zoomTo(0.6); }"
    )
    page.fill("#search", "softmax")
    page.wait_for_function(
        "() => /^\\d+ hits$/.test(document.getElementById('hits').textContent)", timeout=WAIT_MS
    )
    page.wait_for_timeout(300)
    # docs/ only when asked (as tests/web/test_viewer_screens.py): a run leaves the tree clean
    update = os.environ.get("TPX_UPDATE_SCREENSHOTS") == "1"
    path = (
        ROOT / "docs" / "viewer-100k.png"
        if update
        else Path(tempfile.gettempdir()) / "viewer-100k.png"
    )
    page.screenshot(path=str(path))
    return path


def verdict(value: float | None, goal: float) -> str:
    if value is None:
        return f"n/a (goal <= {goal:g})"
    return f"{'meets' if value <= goal else 'MISSES'} goal <= {goal:g}"


def split(t: dict) -> str:
    """Where a re-layout's time went: the request (server + transfer), the worker's decoding
    and indexing, the page's (rows from the worker's columns, its own lookups)."""
    if "fetch" not in t:
        return "no split"
    if "decode" not in t:
        return f"request {t['fetch']:.0f} ms, indexing here {t['index']:.0f} ms"
    return (
        f"request {t['request']:.0f} ms, worker decode+index {t['decode']:.0f} ms, page rows "
        f"{t['rows']:.0f} + index {t['index']:.0f} ms"
    )


def shares(t: dict) -> str:
    """'first frame: server a ms, transfer b, page c (HTML+JS d)'; the same for the search."""
    parts = []
    for key, what in (("first", "first frame"), ("hits", "search")):
        if key in t:
            s = t[key]
            parts.append(
                f"{what} at {s['at']:.0f} ms = server {s['server']:.0f} + transfer "
                f"{s['transfer']:.0f} + page {s['page']:.0f}"
            )
    return "; ".join(parts) + f" (page includes HTML+JS {t['dom']:.0f} ms)"


def report(run: str, nodes: int, r: dict) -> None:
    print(f"-- {run} ({nodes} nodes)")
    if "cold" in r:
        c = r["cold"]
        print(
            f"  cold open         first frame {c['first']:.2f} s, search {c['interactive']:.2f} s "
            f"(the server reads the trace; slowest requests, ms: {c['requests']})"
        )
        print(f"    split (cold)    {shares(c['timeline'])}")
    if "first" in r:
        share = r["labelled"] / r["drawn"] if r["drawn"] else 0.0
        readable = "readable" if share >= 0.8 else "NOT readable"
        print(
            f"  first frame       {r['first']:6.2f} s  {verdict(r['first'], GOALS['first'])}; "
            f"{r['labelled']}/{r['drawn']} boxes labelled ({share:.0%}, {readable}: >= 80%)"
        )
    if "interactive" in r:
        print(
            f"  search answers    {r['interactive']:6.2f} s  "
            f"{verdict(r['interactive'], GOALS['interactive'])} ({r['hits']})"
        )
        print(f"  warm requests     slowest, ms: {r['requests']}")
        print(f"    split (warm)    {shares(r['timeline'])}")
    if "open_longest" in r:
        print(
            f"  longest page task {r['open_longest']:6.0f} ms from navigation until the group tree "
            "is in place (goal: none over 50 ms)"
        )
    if "expand" in r:
        e = r["expand"]
        s = None if e["ms"] is None else e["ms"] / 1000
        shown = "—" if s is None else f"{s:6.2f} s"
        print(
            f"  expand one box    {shown}  {verdict(s, GOALS['expand'])} ({e.get('what')}, "
            f"{e.get('boxes', '?')} boxes after; {split(e)})"
        )
    if "expand_all" in r:
        a = r["expand_all"]
        print(
            f"  expand all        first frame {a['ms'] / 1000:6.2f} s ({a['boxes']} boxes, "
            f"{a['coarse']} small frames as blocks; {split(a)})"
        )
        if "fit" in a:
            f = a["fit"]
            print(
                f"                    the Fit view's region drawn at {f['ms'] / 1000:6.2f} s "
                f"({f['boxes']} boxes, {f['coarse']} frames as blocks; {split(f)})"
            )
        if "region" in a:
            g = a["region"]
            print(
                f"                    zoom 1 about the middle: region in {g['ms'] / 1000:6.2f} s "
                f"({g['boxes']} boxes, {g['coarse']} blocks left; {split(g)})"
            )
        else:
            w = a["whole"]
            print(
                f"                    whole layout {w['ms'] / 1000:6.2f} s ({w['boxes']} boxes; "
                f"{split(w)})"
            )
        print(f"                    longest page task {a['longest_task']:.0f} ms")
    for key, where in (("pan_fit", "at Fit"), ("pan_1", "at zoom 1")):
        if key in r:
            p = r[key]
            print(
                f"  pan {where:9s}     frame (render + raster) {p['frame']['mean']:5.1f} ms, p95 "
                f"{p['frame']['p95']:.1f} ms {verdict(p['frame']['p95'], GOALS['pan_ms'])} "
                f"(render alone {p['render']['mean']:.1f} ms); {p['drawn']} boxes drawn, "
                f"{p['aggregated']} as aggregates"
            )
            print(
                f"                    interval between animation frames {p['interval']['mean']:.1f}"
                f" ms (p95 {p['interval']['p95']:.1f}; 16.7 at 60 Hz, more when the machine is "
                f"loaded: load average {os.getloadavg()[0]:.1f})"
            )
    if "screenshot" in r:
        print(f"  screenshot        {r['screenshot']}")
    if "error" in r:
        print(f"  FAILED: {r['error']}")


def must_show(run: str, nodes: int, r: dict, export: float | None) -> list[tuple]:
    """The issue's must-show figures of one trace: (figure, value, unit, goal)."""
    rows: list[tuple] = []
    cold = r.get("cold", {})
    for key, what, goal in (("first", "first frame", "first"), ("interactive", "search answers",
                                                                  "interactive")):  # fmt: skip
        rows.append((f"{what}, cold server", cold.get(key), "s", GOALS[goal]))
        rows.append((f"{what}, warm server", r.get(key), "s", GOALS[goal]))
    if r.get("drawn"):
        rows.append(("boxes labelled at Fit", 100 * r["labelled"] / r["drawn"], "%", -80.0))
    if "expand" in r and r["expand"].get("ms") is not None:
        rows.append(("expand one box", r["expand"]["ms"] / 1000, "s", GOALS["expand"]))
    if export is not None:
        rows.append(("svg export (CLI, wall)", export, "s", 5.0))
    for key, where in (("pan_fit", "at Fit"), ("pan_1", "at zoom 1")):
        if key in r:
            rows.append((f"pan frame p95 {where} (render+raster)", r[key]["frame"]["p95"], "ms",
                         GOALS["pan_ms"]))  # fmt: skip
    if "open_longest" in r:
        rows.append(("longest page task, open + tree", r["open_longest"], "ms", 50.0))
    if "expand_all" in r:
        a = r["expand_all"]
        rows.append(("Expand all, first frame (no goal)", a["ms"] / 1000, "s", None))
        if "fit" in a:
            rows.append(("Expand all, Fit view's region drawn", a["fit"]["ms"] / 1000, "s", None))
        if "region" in a:
            rows.append(("Expand all, then zoom 1: region", a["region"]["ms"] / 1000, "s", None))
        else:
            rows.append(("Expand all, whole layout", a["whole"]["ms"] / 1000, "s", None))
        rows.append(("  longest page task meanwhile", a["longest_task"], "ms", 50.0))
    return [(f"{run} ({nodes})", *row) for row in rows]


def summary(rows: list[tuple]) -> None:
    """One table of every must-show figure with its goal (a negative goal: at least)."""
    print("\n== must show (issue 14): every figure of this run with its goal ==")
    for trace, what, value, unit, goal in rows:
        if value is None:
            shown, verdict_ = "—", "not measured"
        else:
            shown = f"{value:8.2f} {unit}"
            if goal is None:
                verdict_ = ""
            elif goal < 0:
                verdict_ = f"{'meets' if value >= -goal else 'MISSES'} >= {-goal:g} {unit}"
            else:
                verdict_ = f"{'meets' if value <= goal else 'MISSES'} <= {goal:g} {unit}"
        print(f"{trace:26s} {what:38s} {shown:>12s}  {verdict_}")
    from benchmarks.bench_export import blas

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; BLAS: {blas()}")


def export_seconds(folder: Path, run: str) -> float | None:
    """``tpx-inspect export --format svg`` of the trace, wall seconds (bench_export's timing)."""
    from benchmarks.bench_export import cli_export

    with tempfile.TemporaryDirectory() as out:
        try:
            return cli_export(folder / run, Path(out) / "graph.svg")[0]
        except RuntimeError as err:
            print(f"  export failed: {err}")
            return None


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    sizes = [int(s) for s in os.environ.get("BENCH_VIEWER_SIZES", "20000,100000").split(",")]
    keep = os.environ.get("BENCH_VIEWER_TRACES")  # a folder: traces written once, reused
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        runs = build(folder, sizes)
        rows: list[tuple] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=LAUNCH_ARGS)
            try:
                for run, nodes in runs:
                    # A fresh server per trace, serving that run alone: the cold open is cold.
                    server = _serve(folder / run)
                    try:
                        r = measure(browser, server.url.rstrip("/"), run, full=nodes >= 90_000)
                    finally:
                        server.stop(timeout=10)
                    report(run, nodes, r)
                    # the svg export: of the 20k and the unscoped graph (issue 14's must-show)
                    export = export_seconds(folder, run) if nodes < 90_000 else None
                    rows += must_show(run, nodes, r, export)
            finally:
                browser.close()
        summary(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
