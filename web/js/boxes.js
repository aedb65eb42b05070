// From real nodes to the boxes of the current view: a node drawn as itself, or the innermost
// folded scope holding it; and the view made drawable.

import { state } from "./app.js";
import { containersOf, groupOf } from "./vm.js";

export { ancestors, framesOf, toDrawable } from "./drawable.js";

export function indexView(view) {
  // Lookups for boxOf: real nodes drawn as themselves, and folded groups by what they open.
  state.boxByNode = new Map();
  state.boxByScope = new Map();
  state.boxByBlock = new Map();
  for (const v of view.nodes) {
    if (v.block) state.boxByBlock.set(v.id, v);
    if (v.group === undefined) v.group = groupOf(v);
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

// The block (a frame drawn as one box while its contents are not loaded: Expand all of a big
// graph) holding a real node, or null. Never used for check marks: a block shows no verdict.
export function blockOf(nodeId) {
  for (const g of containersOf(nodeId)) {
    const block = state.boxByBlock.get(g);
    if (block) return block;
  }
  return null;
}
