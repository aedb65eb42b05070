// Timing hooks for benchmarks/bench_viewer.py and the tests: expand one folded box, expand
// everything, and the cost of frames while panning. Nothing here changes what a person sees.

import { main, state } from "./app.js";
import { refreshView, setExpandAll, settleRegion } from "./load.js";
import { toggle } from "./picking.js";

// Wait for the next frame drawn by the main view (an error after 10 s: a frame that never comes).
function nextFrame() {
  const f = main.frame, t0 = performance.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (main.frame > f) resolve();
      else if (performance.now() - t0 > 10_000) reject(new Error(`no frame drawn in 10 s (last error: ${main.lastError})`));
      else requestAnimationFrame(poll);
    };
    requestAnimationFrame(poll);
  });
}

// Expand the biggest folded box in view; milliseconds until its expansion is drawn.
export async function expandOne() {
  const folded = main.graph.nodes.filter((b) => b.group !== null).sort((a, b) => b.size - a.size);
  if (!folded.length) return { ms: null, what: "no folded box" };
  const t0 = performance.now();
  await toggle(folded[0].group);
  await nextFrame();
  return { ms: performance.now() - t0, what: folded[0].group, boxes: main.graph.nodes.length, ...state.timing };
}

// Expand all: until its first frame (on a big graph: the base, its outer frames as blocks),
// then until the region the Fit view shows is drawn, then, zoomed to 1 about the middle, until
// the region there is (without the layout worker: until the whole layout is drawn).
export async function expandAll() {
  const t0 = performance.now();
  setExpandAll();
  await refreshView();
  main.fit();
  await nextFrame();
  const first = { ms: performance.now() - t0, boxes: main.graph.nodes.length, coarse: state.view.coarse || 0, ...state.timing };
  if (!first.coarse) return { ...first, whole: { ms: first.ms, boxes: first.boxes } };
  const seen = () => ({ boxes: main.graph.nodes.length, coarse: state.view.coarse || 0, ...state.timing });
  if (state.region) {
    await zoomTo(main.cam.k);
    const fit = { ms: performance.now() - t0, ...seen() };
    const t1 = performance.now();
    await zoomTo(1);
    return { ...first, fit, region: { ms: performance.now() - t1, ...seen() } };
  }
  const seq = String(state.viewSeq);
  while (document.body.dataset.detail !== seq) await new Promise((resolve) => setTimeout(resolve, 50));
  main.draw(); // its frame may be drawn already: one more, to be sure it is on screen
  await nextFrame();
  return { ...first, whole: { ms: performance.now() - t0, ...seen() } };
}

// Fit; resolves once what the Fit view needs is drawn.
export async function fitView() {
  main.fit();
  await zoomTo(main.cam.k);
}

// Zoom to ``k`` about the middle of the view; resolves once what that view needs is drawn.
export async function zoomTo(k) {
  if (k !== main.cam.k) main.zoomBy(k / main.cam.k);
  await nextFrame();
  await settleRegion();
  main.draw();
  await nextFrame();
}

// Pan by ``dx`` screen px per frame for ``frames`` frames at zoom ``k`` (null: as it is):
// the time render() takes and the interval between animation frames, in ms.
// Pans there and back (vertically when the graph is taller than wide), about the centre.
export async function panFrames(frames = 60, dx = 40, k = null) {
  if (k !== null) await zoomTo(k);
  const tall = main.graph.height > main.graph.width;
  const render = [], interval = [];
  let drawn = 0, aggregated = 0;
  main.draw();
  await nextFrame();
  let last = performance.now();
  for (let i = 0; i < frames; i++) {
    const d = i % 30 < 15 ? -dx : dx;
    main.panBy(tall ? 0 : d, tall ? d : 0);
    await nextFrame();
    const now = performance.now();
    interval.push(now - last);
    render.push(main.lastRenderMs);
    drawn = Math.max(drawn, main.drawnNodes);
    aggregated = Math.max(aggregated, main.aggregated);
    last = now;
  }
  return { render: stats(render), interval: stats(interval), frame: frameCost(frames, dx, tall), drawn, aggregated };
}

// What one frame costs the page: render() plus the canvas' rasterization (forced by reading a
// pixel back; render() alone only records the drawing), at each position of the same pan.
function frameCost(frames, dx, tall) {
  const cost = [];
  for (let i = 0; i < frames; i++) {
    const d = i % 30 < 15 ? -dx : dx;
    main.cam.x -= (tall ? 0 : d) / main.cam.k;
    main.cam.y -= (tall ? d : 0) / main.cam.k;
    const t0 = performance.now();
    main.render();
    main.ctx.getImageData(0, 0, 1, 1);
    cost.push(performance.now() - t0);
  }
  return stats(cost);
}

function stats(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  return { mean: s.reduce((a, b) => a + b, 0) / s.length, p95: s[Math.floor(0.95 * (s.length - 1))], max: s[s.length - 1] };
}
