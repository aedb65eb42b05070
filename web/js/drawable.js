// From a layout answer to what the canvas draws: box labels split into a first line and the
// rest, edges as source/target and a run [p, q) of the graph's one flat array of points, frames (the server's, or computed here from scope names
// for an older server). Pure functions: the layout worker (layout-worker.js) runs them too.

export const GROUP_KINDS = new Set(["scope", "repeat", "loop", "params"]);

export function toDrawable(view) {
  const nodes = view.nodes.map(drawableBox);
  const { edges, points } = drawableEdges(view.edges);
  const frames = view.frames ? view.frames.map((f) => ({ ...f, label: f.label.split("\n")[0] })) : framesOf(nodes, new Set(view.expanded || []));
  return { nodes, edges, points, frames, width: view.width, height: view.height };
}

// Every edge's points in one flat array (x0, y0, x1, y1, ...), an edge holding the run
// [p, q) of it: one buffer to hand between threads, no array per point or per edge.
function drawableEdges(raw) {
  let total = 0;
  for (const e of raw) total += 2 * (e.points?.length || 0);
  const points = new Float64Array(total);
  let at = 0;
  const edges = raw.map((e) => {
    const p = at;
    for (const [x, y] of e.points || []) {
      points[at++] = x;
      points[at++] = y;
    }
    return { source: e.src, target: e.dst, label: e.label, p, q: at };
  });
  return { edges, points };
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
  const { edges, points } = drawableEdges(res.edges);
  const frames = (res.frames || []).map((f) => ({ ...f, label: f.label.split("\n")[0] }));
  const nodes = res.boxes.concat(blocksOf(res));
  res.coarse = res.aggregates?.length || 0;
  delete res.aggregates;
  return { nodes, edges, points, frames, width: res.width, height: res.height };
}

// Frames sent as one block (``min_size``): drawn as boxes that open nothing (their group is
// expanded already; the whole layout brings their contents).
export function blocksOf(res) {
  return (res.aggregates || []).map((a) => ({ ...a, label: a.label.split("\n")[0], sublabel: `${a.size} nodes`, group: null, block: true }));
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
    if (rows.every((r) => r[k] === undefined || typeof r[k] === "number")) out.num[k] = Float64Array.from(rows, (r) => r[k] ?? NaN);
    else out.any[k] = rows.map((r) => r[k]);
  }
  return out;
}

// Rows ``from`` .. ``to`` of columns (all of them by default) into ``rows``.
export function rowsOf(cols, rows = new Array(cols.n), from = 0, to = cols.n) {
  const anyKeys = Object.keys(cols.any), anyCols = anyKeys.map((k) => cols.any[k]);
  const numKeys = Object.keys(cols.num), numCols = numKeys.map((k) => cols.num[k]);
  for (let i = from; i < to; i++) {
    const r = {};
    for (let j = 0; j < anyKeys.length; j++) if (anyCols[j][i] !== undefined) r[anyKeys[j]] = anyCols[j][i];
    for (let j = 0; j < numKeys.length; j++) if (numCols[j][i] === numCols[j][i]) r[numKeys[j]] = numCols[j][i]; // not NaN
    rows[i] = r;
  }
  return rows;
}

// The buffers of columns, for postMessage's transfer list.
export function columnBuffers(cols) {
  return Object.values(cols.num).map((a) => a.buffer);
}
