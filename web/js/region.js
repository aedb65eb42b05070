// A region of a big layout over its coarse "base" (issue 14, Expand all at 100k): the base is
// the whole graph with small frames as one block each (asked once); a region is the server's
// answer for a viewport at a finer ``min_size`` (GET layout?key=&viewport=&min_size=). The
// drawn graph is the region plus every item of the base that lies wholly outside the region's
// rectangle. Pure functions on drawable layouts (drawable.js): the layout worker runs them.

import { bbox, intersects } from "./spatial.js";

// {nodes, edges, points, frames, width, height} of base + region; ``rect`` {x0, y0, x1, y1}.
export function compose(base, region, rect) {
  const ids = new Set(region.nodes.map((n) => n.id));
  for (const f of region.frames) ids.add(f.id);
  const outside = (n) => !ids.has(n.id) && !intersects(boxOf(n), rect);
  const nodes = region.nodes.concat(base.nodes.filter(outside));
  const frames = region.frames.concat(base.frames.filter((f) => !ids.has(f.id)));
  const kept = base.edges.filter((e) => e.q - e.p >= 4 && !intersects(bbox(base.points, e.p, e.q), rect));
  let total = region.points.length;
  for (const e of kept) total += e.q - e.p;
  const points = new Float64Array(total);
  points.set(region.points);
  let at = region.points.length;
  const edges = region.edges.slice();
  for (const e of kept) {
    points.set(base.points.subarray(e.p, e.q), at);
    edges.push({ ...e, p: at, q: at + e.q - e.p });
    at += e.q - e.p;
  }
  return { nodes, edges, points, frames, width: base.width, height: base.height };
}

function boxOf(n) {
  return { x0: n.x - n.w / 2, y0: n.y - n.h / 2, x1: n.x + n.w / 2, y1: n.y + n.h / 2 };
}

// The rectangle a region is asked for: the view with one view's width and height of margin on
// every side (so that panning stays inside it for a while), and the ``min_size`` that makes a
// frame smaller than ``px`` screen pixels one block.
export function regionFor(view, k, px = 24) {
  const w = view.x1 - view.x0, h = view.y1 - view.y0;
  return { rect: { x0: view.x0 - w, y0: view.y0 - h, x1: view.x1 + w, y1: view.y1 + h }, minSize: Math.ceil(px / k) };
}
