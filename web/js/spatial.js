// A spatial index of a laid-out graph: boxes and edges bucketed in a grid of world cells, for
// hit testing and for drawing only what meets the viewport; and a pyramid of aggregates (each
// level's cells 4x the size of the level below) for drawing boxes too small to read as blocks.

export const CELL = 256; // world units per cell of level 0
const LONG = 64; // an edge whose bounding box covers more cells than this is kept in a list

export class SpatialIndex {
  constructor(nodes, edges) {
    this.cells = new Map();
    this.edgeCells = new Map();
    this.longEdges = [];
    for (const n of nodes) this._addBox(n);
    for (const e of edges) this._addEdge(e);
    this.levels = buildLevels(nodes);
  }

  _addBox(n) {
    const x0 = Math.floor((n.x - n.w / 2) / CELL), x1 = Math.floor((n.x + n.w / 2) / CELL);
    const y0 = Math.floor((n.y - n.h / 2) / CELL), y1 = Math.floor((n.y + n.h / 2) / CELL);
    for (let gx = x0; gx <= x1; gx++) for (let gy = y0; gy <= y1; gy++) push(this.cells, gx + "," + gy, n);
  }

  _addEdge(e) {
    if (!e.points || e.points.length < 2) return;
    const b = (e.bbox = bbox(e.points));
    const x0 = Math.floor(b.x0 / CELL), x1 = Math.floor(b.x1 / CELL);
    const y0 = Math.floor(b.y0 / CELL), y1 = Math.floor(b.y1 / CELL);
    if ((x1 - x0 + 1) * (y1 - y0 + 1) > LONG) {
      this.longEdges.push(e);
      return;
    }
    for (let gx = x0; gx <= x1; gx++) for (let gy = y0; gy <= y1; gy++) push(this.edgeCells, gx + "," + gy, e);
  }

  // Every box meeting the rectangle, once each.
  boxesIn(view) {
    return this._collect(this.cells, view, (n) => n.x + n.w / 2 >= view.x0 && n.x - n.w / 2 <= view.x1 && n.y + n.h / 2 >= view.y0 && n.y - n.h / 2 <= view.y1);
  }

  edgesIn(view) {
    const near = this._collect(this.edgeCells, view, (e) => intersects(e.bbox, view));
    for (const e of this.longEdges) if (intersects(e.bbox, view)) near.push(e);
    return near;
  }

  _collect(cells, view, keep) {
    const out = [], seen = new Set();
    const x0 = Math.floor(view.x0 / CELL), x1 = Math.floor(view.x1 / CELL);
    const y0 = Math.floor(view.y0 / CELL), y1 = Math.floor(view.y1 / CELL);
    if ((x1 - x0 + 1) * (y1 - y0 + 1) > cells.size) {
      // Zoomed out past the grid: walking the buckets is cheaper than walking the cells.
      for (const list of cells.values()) for (const item of list) if (!seen.has(item) && keep(item)) { seen.add(item); out.push(item); }
      return out;
    }
    for (let gx = x0; gx <= x1; gx++) {
      for (let gy = y0; gy <= y1; gy++) {
        for (const item of cells.get(gx + "," + gy) || []) if (!seen.has(item) && keep(item)) { seen.add(item); out.push(item); }
      }
    }
    return out;
  }

  // The aggregates of the finest level whose cells are at least ``px`` screen pixels at zoom
  // ``k``: [{x0, y0, x1, y1, count, kind, rep}] meeting the rectangle.
  aggregatesIn(view, k, px) {
    let level = 0;
    while (level < this.levels.length - 1 && CELL * 4 ** level * k < px) level += 1;
    return this.levels[level].filter((a) => intersects(a, view));
  }
}

// Level 0: one aggregate per occupied cell (by box centre); each next level merges 4x4 cells.
function buildLevels(nodes) {
  let cells = new Map();
  for (const n of nodes) {
    const key = Math.floor(n.x / CELL) + "," + Math.floor(n.y / CELL);
    let a = cells.get(key);
    if (!a) cells.set(key, (a = { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity, count: 0, kinds: {}, rep: n }));
    a.x0 = Math.min(a.x0, n.x - n.w / 2); a.y0 = Math.min(a.y0, n.y - n.h / 2);
    a.x1 = Math.max(a.x1, n.x + n.w / 2); a.y1 = Math.max(a.y1, n.y + n.h / 2);
    a.count += 1;
    a.kinds[n.kind] = (a.kinds[n.kind] || 0) + 1;
  }
  const levels = [finish(cells)];
  let size = CELL;
  while (cells.size > 1 && levels.length < 12) {
    size *= 4;
    const up = new Map();
    for (const a of cells.values()) {
      const key = Math.floor(a.x0 / size) + "," + Math.floor(a.y0 / size);
      const b = up.get(key);
      if (!b) up.set(key, { ...a, kinds: { ...a.kinds } });
      else {
        b.x0 = Math.min(b.x0, a.x0); b.y0 = Math.min(b.y0, a.y0); b.x1 = Math.max(b.x1, a.x1); b.y1 = Math.max(b.y1, a.y1);
        b.count += a.count;
        for (const [kd, c] of Object.entries(a.kinds)) b.kinds[kd] = (b.kinds[kd] || 0) + c;
      }
    }
    cells = up;
    levels.push(finish(cells));
  }
  return levels;
}

function finish(cells) {
  return [...cells.values()].map((a) => ({ ...a, kind: Object.entries(a.kinds).sort((p, q) => q[1] - p[1])[0][0] }));
}

function push(map, key, item) {
  const list = map.get(key);
  if (list) list.push(item);
  else map.set(key, [item]);
}

export function bbox(pts) {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const [x, y] of pts) {
    x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
  }
  return { x0, y0, x1, y1 };
}

export function intersects(b, v) {
  return !(b.x1 < v.x0 || b.x0 > v.x1 || b.y1 < v.y0 || b.y0 > v.y1);
}
