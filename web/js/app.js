// What every part of the viewer shares: the data source, the state of what is shown, the main
// graph view, and the status line. No logic lives here, only the shared objects.

import { http } from "./api.js";
import { GraphView } from "./graph-view.js";
import { Minimap } from "./minimap.js";

export const $ = (id) => document.getElementById(id);

export const api = http;

export const state = {
  run: null, graph: null, expanded: new Set(), scopes: [], view: null, nodes: [], byNode: new Map(),
  order: [], selected: null, hits: [], hit: -1, findings: new Map(), skips: new Map(), report: null, checked: false,
  diff: null, compare: null, play: { index: -1, timer: null }, colour: "kind", graphs: [], stub: "",
  boxByNode: new Map(), boxByScope: new Map(), legend: null, legendHidden: false, nodesLoaded: false, records: null, tree: null, treeLoad: null, vm: false, expandAll: false,
  // Load generations: a pick made while an earlier one is still loading wins; stale replies are
  // dropped instead of overwriting what the user asked for last.
  loadSeq: 0, viewSeq: 0,
  // Expand all on graphs bigger than this is drawn from a base (frames under coarseMinSize
  // points as blocks: by default only the outermost frames, a small answer that brings the
  // graph's size) and regions about the camera at the detail its zoom can show (load.js).
  // The same for a named state with more than regionalFrom groups open (Expand all, then one
  // group closed).
  coarseFrom: 20_000, coarseMinSize: 1e9, regionalFrom: 1000,
};

export const main = new GraphView($("canvas"));
export const minimap = new Minimap(main, $("minimap"));

// The second view when comparing side by side (made on first use).
export const views = { other: null };

export function status(text) {
  $("status").textContent = text;
}
