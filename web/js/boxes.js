// From real nodes to the boxes of the current view: a node drawn as itself, or the innermost
// folded scope holding it; and the view made drawable.

import { state } from "./app.js";
import { containersOf, groupOf } from "./vm.js";

export function toDrawable(view) {
  const nodes = view.nodes.map((v) => {
    const [label, ...rest] = v.label.split("\n");
    return { ...v, label, sublabel: rest.join(" ") };
  });
  const edges = view.edges.map((e) => ({ source: e.src, target: e.dst, label: e.label, points: e.points }));
  const frames = view.frames ? view.frames.map((f) => ({ ...f, label: f.label.split("\n")[0] })) : framesOf(nodes, new Set(view.expanded || []));
  return { nodes, edges, frames, width: view.width, height: view.height };
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

export function indexView(view) {
  // Lookups for boxOf: real nodes drawn as themselves, and folded groups by what they open.
  state.boxByNode = new Map();
  state.boxByScope = new Map();
  for (const v of view.nodes) {
    v.group = groupOf(v);
    if (v.group !== null) state.boxByScope.set(v.group, v);
    else if (v.kind !== "stub" && v.node !== null && v.node !== undefined) state.boxByNode.set(v.node, v);
  }
}

export function boxOf(nodeId) {
  // The view box that shows a real node: itself, or the innermost folded group holding it.
  const direct = state.boxByNode.get(nodeId);
  if (direct) return direct;
  for (const g of containersOf(nodeId)) {
    const box = state.boxByScope.get(g);
    if (box) return box;
  }
  return null;
}

export function ancestors(scope) {
  const parts = scope ? scope.split(".") : [];
  return parts.map((_, i) => parts.slice(0, i + 1).join("."));
}
