// From a layout answer to what the canvas draws: box labels split into a first line and the
// rest, edges as source/target/points, frames (the server's, or computed here from scope names
// for an older server). Pure functions: the layout worker (layout-worker.js) runs them too.

export const GROUP_KINDS = new Set(["scope", "repeat", "loop", "params"]);

export function toDrawable(view) {
  const nodes = view.nodes.map(drawableBox);
  const edges = view.edges.map(drawableEdge);
  const frames = view.frames ? view.frames.map((f) => ({ ...f, label: f.label.split("\n")[0] })) : framesOf(nodes, new Set(view.expanded || []));
  return { nodes, edges, frames, width: view.width, height: view.height };
}

// An edge's points flat (x0, y0, x1, y1, ...): one typed array, cheap to hand between threads.
function drawableEdge(e) {
  const points = new Float64Array(2 * (e.points?.length || 0));
  (e.points || []).forEach(([x, y], i) => {
    points[2 * i] = x;
    points[2 * i + 1] = y;
  });
  return { source: e.src, target: e.dst, label: e.label, points };
}

function drawableBox(v) {
  const [label, ...rest] = v.label.split("\n");
  return { ...v, label, sublabel: rest.join(" ") };
}

// The view model's boxes, made drawable in place (the worker owns the parsed answer): the group
// a folded box opens is its id; nodes and stubs open none.
export function drawableLayout(res) {
  for (const b of res.boxes) {
    const [label, ...rest] = b.label.split("\n");
    b.label = label;
    b.sublabel = rest.join(" ");
    b.group = GROUP_KINDS.has(b.kind) ? b.id : null;
  }
  const edges = res.edges.map(drawableEdge);
  const frames = (res.frames || []).map((f) => ({ ...f, label: f.label.split("\n")[0] }));
  return { nodes: res.boxes, edges, frames, width: res.width, height: res.height };
}

// Frames around expanded scopes (when the server sends none): the box around their members,
// found by walking each box's enclosing scopes, so the cost is boxes x depth.
export function framesOf(nodes, expanded) {
  const frames = new Map();
  for (const n of nodes) {
    for (const s of ancestors(n.scope || "")) {
      if (!expanded.has(s) || (n.kind === "scope" && s === n.scope)) continue;
      let f = frames.get(s);
      if (!f) frames.set(s, (f = { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity, depth: s.split(".").length }));
      f.x0 = Math.min(f.x0, n.x - n.w / 2); f.y0 = Math.min(f.y0, n.y - n.h / 2);
      f.x1 = Math.max(f.x1, n.x + n.w / 2); f.y1 = Math.max(f.y1, n.y + n.h / 2);
    }
  }
  return [...frames].map(([s, f]) => {
    const pad = 14 - Math.min(f.depth, 4) * 2; // inner frames inside outer ones
    return { id: "s:" + s, label: s, x: (f.x0 + f.x1) / 2, y: (f.y0 + f.y1) / 2 - 6, w: f.x1 - f.x0 + 2 * pad, h: f.y1 - f.y0 + 2 * pad + 12 };
  });
}

export function ancestors(scope) {
  const parts = scope ? scope.split(".") : [];
  return parts.map((_, i) => parts.slice(0, i + 1).join("."));
}

// Rows of objects as columns for postMessage: numbers in Float64Arrays (moved, not copied:
// NaN stands for a missing field), other fields as arrays. Cloning 100k small objects costs
// the page seconds; columns cost it a loop.
export function columns(rows) {
  const keys = new Set();
  for (const r of rows) for (const k in r) keys.add(k);
  const out = { n: rows.length, num: {}, any: {} };
  for (const k of keys) {
    if (k === "points") continue;
    if (rows.every((r) => r[k] === undefined || typeof r[k] === "number")) out.num[k] = Float64Array.from(rows, (r) => r[k] ?? NaN);
    else out.any[k] = rows.map((r) => r[k]);
  }
  if (keys.has("points")) {
    const start = new Int32Array(rows.length + 1);
    rows.forEach((r, i) => (start[i + 1] = start[i] + r.points.length));
    const flat = new Float64Array(start[rows.length]);
    rows.forEach((r, i) => flat.set(r.points, start[i]));
    out.points = { start, flat };
  }
  return out;
}

// Rows ``from`` .. ``to`` of columns (all of them by default) into ``rows``.
export function rowsOf(cols, rows = new Array(cols.n), from = 0, to = cols.n) {
  const anyKeys = Object.keys(cols.any), anyCols = anyKeys.map((k) => cols.any[k]);
  const numKeys = Object.keys(cols.num), numCols = numKeys.map((k) => cols.num[k]);
  const pts = cols.points;
  for (let i = from; i < to; i++) {
    const r = {};
    for (let j = 0; j < anyKeys.length; j++) if (anyCols[j][i] !== undefined) r[anyKeys[j]] = anyCols[j][i];
    for (let j = 0; j < numKeys.length; j++) if (numCols[j][i] === numCols[j][i]) r[numKeys[j]] = numCols[j][i]; // not NaN
    if (pts) r.points = pts.flat.subarray(pts.start[i], pts.start[i + 1]);
    rows[i] = r;
  }
  return rows;
}

// The buffers of columns, for postMessage's transfer list.
export function columnBuffers(cols) {
  const out = Object.values(cols.num).map((a) => a.buffer);
  if (cols.points) out.push(cols.points.start.buffer, cols.points.flat.buffer);
  return out;
}
