// The server's view model of a graph (issue 14), when the server has it: the tree of groups
// (scopes, xN repeated blocks, loops found in unscoped code, parameter groups) with stable ids,
// and what the viewer derives from it: the groups holding a node, the groups below a group.
// Without it (an older server) the same questions are answered from scope names.

import { state } from "./app.js";
import { ancestors } from "./boxes.js";
import { blocksOf, GROUP_KINDS } from "./drawable.js";
import { packTree, TreeIndex } from "./tree.js";

// ``tree``: the server's /tree answer, or the layout worker's packed one (tree.js).
export function setTree(tree) {
  state.tree = tree ? new TreeIndex(tree.ids ? tree : packTree(tree)) : null;
}

// The group a folded box stands for (what expanding it opens), or null for a node or stub.
export function groupOf(box) {
  if (state.vm) return GROUP_KINDS.has(box.kind) ? box.id : null;
  return box.kind === "scope" ? box.scope : null;
}

// The groups holding a node, innermost first (the root left out).
export function containersOf(nodeId) {
  if (!state.vm) return ancestors(state.byNode.get(nodeId)?.scope || "").reverse();
  if (!state.tree) return []; // still on its way: only boxes of nodes themselves are found
  return state.tree.containers(nodeId);
}

// Every group below ``group`` (itself included).
export function groupsBelow(group) {
  if (state.vm && !state.tree) return new Set([group]);
  if (!state.vm) return new Set([...state.expanded].filter((s) => s === group || s.startsWith(group + ".")));
  return state.tree.below(group);
}

export function knownNode(nodeId) {
  if (state.vm) return Number.isInteger(nodeId) && nodeId >= 0 && nodeId < (state.tree?.nodes ?? Infinity);
  return state.byNode.has(nodeId);
}

// Every group that can be expanded (the "scopes" of an older server).
export function allGroups() {
  if (!state.vm) return state.scopes;
  return state.tree ? state.tree.groups() : [...state.expanded].filter((g) => g !== "root");
}

// A layout of the view model as the view the rest of the viewer draws.
export function viewOfLayout(res, expanded) {
  return {
    nodes: res.boxes.concat(blocksOf(res)), edges: res.edges, coarse: res.aggregates?.length || 0, frames: res.frames || [], width: res.width, height: res.height,
    expanded: (res.expanded || expanded).filter((g) => g !== "root"), scopes: allGroups(), key: res.key, engine: "view model", cached: res.cached,
    note: res.total_boxes > res.boxes.length ? `${res.total_boxes} boxes` : "", serverExpanded: res.expanded,
  };
}

// The same from the layout worker: boxes already drawable, the spatial index already packed.
export function viewOfWorker({ meta, graph, packed, ms }, expanded) {
  return {
    nodes: graph.nodes, edges: graph.edges, frames: graph.frames, width: meta.width, height: meta.height, drawable: graph, packed, ms, coarse: meta.coarse,
    expanded: (meta.expanded || expanded).filter((g) => g !== "root"), scopes: allGroups(), key: meta.key, engine: "view model", cached: meta.cached,
    note: meta.total_boxes > graph.nodes.length ? `${meta.total_boxes} boxes` : "", serverExpanded: meta.expanded,
  };
}
