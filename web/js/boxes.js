// From real nodes to the boxes of the current view: a node drawn as itself, or the innermost
// folded scope holding it; and the view made drawable.

import { state } from "./app.js";

export function toDrawable(view) {
  const nodes = view.nodes.map((v) => {
    const [label, ...rest] = v.label.split("\n");
    return { ...v, label, sublabel: rest.join(" ") };
  });
  const edges = view.edges.map((e) => ({ source: e.src, target: e.dst, label: e.label, points: e.points }));
  return { nodes, edges, width: view.width, height: view.height };
}

export function indexView(view) {
  // Lookups for boxOf: real nodes drawn as themselves, and folded scopes by name.
  state.boxByNode = new Map();
  state.boxByScope = new Map();
  for (const v of view.nodes) {
    if (v.kind === "scope") state.boxByScope.set(v.scope, v);
    else if (v.kind !== "stub" && v.node !== null && v.node !== undefined) state.boxByNode.set(v.node, v);
  }
}

export function boxOf(nodeId) {
  // The view box that shows a real node: itself, or the innermost folded scope holding it.
  const direct = state.boxByNode.get(nodeId);
  if (direct) return direct;
  const scopes = ancestors(state.byNode.get(nodeId)?.scope || "");
  for (let i = scopes.length - 1; i >= 0; i--) {
    const box = state.boxByScope.get(scopes[i]);
    if (box) return box;
  }
  return null;
}

export function ancestors(scope) {
  const parts = scope ? scope.split(".") : [];
  return parts.map((_, i) => parts.slice(0, i + 1).join("."));
}
