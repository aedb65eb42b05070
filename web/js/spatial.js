// A spatial index of a laid-out graph: boxes and edges bucketed in a grid of world cells, for
// hit testing and for drawing only what meets the viewport; and a pyramid of aggregates (each
// level's cells 4x the size of the level below) for drawing boxes too small to read as blocks.
// The buckets are packed (cell keys, offsets, item indices in typed arrays) by ``pack``, a pure
// function the layout worker runs, so the page only wraps what the worker sends.

export const CELL = 256; // world units per cell of level 0
const LONG = 64; // an edge or box whose bounding box covers more cells than this: kept in a list

export class SpatialIndex {
  constructor(nodes, edges, points, packed = null) {
    const p = packed || pack(nodes, edges, points);
    this.nodes = nodes;
    this.edges = edges;
    this.cells = new Grid(p.boxes);
    this.edgeCells = new Grid(p.edges);
    this.edgeBox = p.edgeBox; // x0, y0, x1, y1 per edge
    this.longEdges = Array.from(p.long);
    this.bigBoxes = Array.from(p.big || []); // boxes over too many cells (a block of a big frame)
    this.levels = p.levels; // packed: objects made only for the aggregates drawn
    this.kinds = p.kinds;
    this.seenBox = new Uint32Array(nodes.length);
    this.seenEdge = new Uint32Array(edges.length);
    this.stamp = 0;
  }

  // The boxes whose cell holds the world point (candidates for a hit test).
  boxesAt(wx, wy) {
    return Array.from(this.cells.items(cellKey(wx, wy)), (i) => this.nodes[i]).concat(this.bigBoxes.map((i) => this.nodes[i]));
  }

  // Every box meeting the rectangle, once each.
  boxesIn(view) {
    const keep = (i) => {
      const n = this.nodes[i];
      return n.x + n.w / 2 >= view.x0 && n.x - n.w / 2 <= view.x1 && n.y + n.h / 2 >= view.y0 && n.y - n.h / 2 <= view.y1;
    };
    const near = this._collect(this.cells, this.seenBox, view, keep);
    for (const i of this.bigBoxes) if (keep(i)) near.push(i);
    return near.map((i) => this.nodes[i]);
  }

  edgesIn(view) {
    const b = this.edgeBox;
    const meets = (i) => !(b[4 * i + 2] < view.x0 || b[4 * i] > view.x1 || b[4 * i + 3] < view.y0 || b[4 * i + 1] > view.y1);
    const near = this._collect(this.edgeCells, this.seenEdge, view, meets);
    for (const i of this.longEdges) if (meets(i)) near.push(i);
    return near.map((i) => this.edges[i]);
  }

  _collect(grid, seen, view, keep) {
    const out = [], stamp = ++this.stamp;
    const take = (i) => {
      if (seen[i] !== stamp && keep(i)) {
        seen[i] = stamp;
        out.push(i);
      }
    };
    const x0 = Math.floor(view.x0 / CELL), x1 = Math.floor(view.x1 / CELL);
    const y0 = Math.floor(view.y0 / CELL), y1 = Math.floor(view.y1 / CELL);
    if ((x1 - x0 + 1) * (y1 - y0 + 1) > grid.size) {
      // Zoomed out past the grid: walking the buckets is cheaper than walking the cells.
      for (const i of grid.all) take(i);
      return out;
    }
    for (let gx = x0; gx <= x1; gx++) for (let gy = y0; gy <= y1; gy++) for (const i of grid.items(key(gx, gy))) take(i);
    return out;
  }

  // The aggregates of the finest level whose cells are at least ``px`` screen pixels at zoom
  // ``k``: [{x0, y0, x1, y1, count, kind, rep}] meeting the rectangle.
  aggregatesIn(view, k, px) {
    let level = 0;
    while (level < this.levels.length - 1 && CELL * 4 ** level * k < px) level += 1;
    const { box, rep, kind } = this.levels[level], out = [];
    for (let i = 0; i < rep.length; i++) {
      const x0 = box[5 * i], y0 = box[5 * i + 1], x1 = box[5 * i + 2], y1 = box[5 * i + 3];
      if (x1 < view.x0 || x0 > view.x1 || y1 < view.y0 || y0 > view.y1) continue;
      out.push({ x0, y0, x1, y1, count: box[5 * i + 4], kind: this.kinds[kind[i]], rep: this.nodes[rep[i]] });
    }
    return out;
  }
}

// Packed buckets: cell key -> a run of item indices. Keys are numbers (key()), sorted, in a
// typed array: found by binary search, nothing to build on the page.
class Grid {
  constructor({ keys, start, items }) {
    this.keys = keys;
    this.start = start;
    this.all = items;
    this.size = keys.length;
  }

  items(key) {
    let lo = 0, hi = this.keys.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1, k = this.keys[mid];
      if (k === key) return this.all.subarray(this.start[mid], this.start[mid + 1]);
      if (k < key) lo = mid + 1;
      else hi = mid - 1;
    }
    return EMPTY;
  }
}

const EMPTY = new Int32Array(0);
const OFF = 2 ** 20; // cells from -2^20 to 2^20 on each axis

// The number naming cell (gx, gy).
export function key(gx, gy) {
  return (gx + OFF) * 2 ** 22 + (gy + OFF);
}

function cellKey(wx, wy) {
  return key(Math.floor(wx / CELL), Math.floor(wy / CELL));
}

// Everything the index needs, in arrays a worker can hand over: boxes and edges bucketed by
// cell, each edge's bounding box, edges too long to bucket, and the aggregate pyramid (an
// aggregate's ``rep`` is the index of one of its boxes).
export function pack(nodes, edges, points) {
  const boxCells = new Map(), big = [];
  nodes.forEach((n, i) => {
    const x0 = Math.floor((n.x - n.w / 2) / CELL), x1 = Math.floor((n.x + n.w / 2) / CELL);
    const y0 = Math.floor((n.y - n.h / 2) / CELL), y1 = Math.floor((n.y + n.h / 2) / CELL);
    if ((x1 - x0 + 1) * (y1 - y0 + 1) > LONG) big.push(i);
    else for (let gx = x0; gx <= x1; gx++) for (let gy = y0; gy <= y1; gy++) push(boxCells, key(gx, gy), i);
  });
  const edgeCells = new Map(), edgeBox = new Float64Array(4 * edges.length), long = [];
  edges.forEach((e, i) => {
    if (e.q - e.p < 4) {
      edgeBox.fill(NaN, 4 * i, 4 * i + 4); // no line: in no cell, never drawn
      return;
    }
    const b = bbox(points, e.p, e.q);
    edgeBox.set([b.x0, b.y0, b.x1, b.y1], 4 * i);
    const x0 = Math.floor(b.x0 / CELL), x1 = Math.floor(b.x1 / CELL);
    const y0 = Math.floor(b.y0 / CELL), y1 = Math.floor(b.y1 / CELL);
    if ((x1 - x0 + 1) * (y1 - y0 + 1) > LONG) long.push(i);
    else for (let gx = x0; gx <= x1; gx++) for (let gy = y0; gy <= y1; gy++) push(edgeCells, key(gx, gy), i);
  });
  const kinds = [];
  const levels = buildLevels(nodes).map((level) => packLevel(level, kinds));
  return { boxes: packCells(boxCells), edges: packCells(edgeCells), edgeBox, long: Int32Array.from(long), big: Int32Array.from(big), levels, kinds };
}

// A level of aggregates as typed arrays: x0, y0, x1, y1, count per aggregate; its
// representative box's index; its kind's index in ``kinds``.
function packLevel(level, kinds) {
  const box = new Float64Array(5 * level.length), rep = new Int32Array(level.length), kind = new Uint8Array(level.length);
  level.forEach((a, i) => {
    box.set([a.x0, a.y0, a.x1, a.y1, a.count], 5 * i);
    rep[i] = a.rep;
    if (!kinds.includes(a.kind)) kinds.push(a.kind);
    kind[i] = kinds.indexOf(a.kind);
  });
  return { box, rep, kind };
}

function packCells(cells) {
  const keys = Float64Array.from(cells.keys()).sort(), start = new Int32Array(keys.length + 1);
  let total = 0;
  keys.forEach((k, s) => {
    start[s] = total;
    total += cells.get(k).length;
  });
  start[keys.length] = total;
  const items = new Int32Array(total);
  keys.forEach((k, s) => items.set(cells.get(k), start[s]));
  return { keys, start, items };
}

// The typed arrays of a pack, for postMessage's transfer list (moved, not copied).
export function transferables(p) {
  const levels = p.levels.flatMap((l) => [l.box.buffer, l.rep.buffer, l.kind.buffer]);
  return [p.boxes.keys.buffer, p.boxes.start.buffer, p.boxes.items.buffer, p.edges.keys.buffer, p.edges.start.buffer, p.edges.items.buffer, p.edgeBox.buffer, p.long.buffer, p.big.buffer, ...levels];
}

// Level 0: one aggregate per occupied cell (by box centre); each next level merges 4x4 cells.
function buildLevels(nodes) {
  let cells = new Map();
  nodes.forEach((n, i) => {
    const key = Math.floor(n.x / CELL) + "," + Math.floor(n.y / CELL);
    let a = cells.get(key);
    if (!a) cells.set(key, (a = { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity, count: 0, kinds: {}, rep: i }));
    a.x0 = Math.min(a.x0, n.x - n.w / 2); a.y0 = Math.min(a.y0, n.y - n.h / 2);
    a.x1 = Math.max(a.x1, n.x + n.w / 2); a.y1 = Math.max(a.y1, n.y + n.h / 2);
    a.count += 1;
    a.kinds[n.kind] = (a.kinds[n.kind] || 0) + 1;
  });
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
  return [...cells.values()].map(({ kinds, ...a }) => ({ ...a, kind: Object.entries(kinds).sort((p, q) => q[1] - p[1])[0][0] }));
}

function push(map, key, item) {
  const list = map.get(key);
  if (list) list.push(item);
  else map.set(key, [item]);
}

// The bounding box of the run [p, q) of flat points (x0, y0, x1, y1, ...).
export function bbox(pts, p = 0, q = pts.length) {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (let i = p; i < q; i += 2) {
    x0 = Math.min(x0, pts[i]); y0 = Math.min(y0, pts[i + 1]); x1 = Math.max(x1, pts[i]); y1 = Math.max(y1, pts[i + 1]);
  }
  return { x0, y0, x1, y1 };
}

export function intersects(b, v) {
  return !(b.x1 < v.x0 || b.x0 > v.x1 || b.y1 < v.y0 || b.y0 > v.y1);
}

// How wide a label centred on box ``n`` may be without reaching the next box beside it (one of
// ``near`` whose height overlaps its own, wherever its centre is): the box's width plus twice
// the smaller gap beside it (a few points kept clear).
export function labelRoom(n, near) {
  let gap = Infinity;
  for (const m of near) {
    if (m === n || Math.abs(m.y - n.y) > ((m.h || 0) + (n.h || 0)) / 2) continue;
    gap = Math.min(gap, Math.abs(m.x - n.x) - (m.w + n.w) / 2);
  }
  return n.w + 2 * Math.max(0, gap - 4);
}

export function medianHeight(nodes) {
  const heights = Float64Array.from(nodes, (n) => n.h).sort();
  return heights.length ? heights[Math.floor(heights.length / 2)] : 40;
}
