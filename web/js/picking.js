// Picking: selecting a node (revealing its folded scopes), toggling scopes, clicks on boxes,
// search and its hits, and stepping through the backward order.

import { $, api, main, state } from "./app.js";
import { blockOf, boxOf } from "./boxes.js";
import { ensureRecords, ensureTree, refreshView, settleRegion } from "./load.js";
import { containersOf, groupsBelow, knownNode } from "./vm.js";
import { renderBox, renderMessage, renderNode } from "./panel.js";
import { updateURL } from "./url.js";

export async function reveal(nodeId) {
  await ensureTree();
  const box = boxOf(nodeId);
  if (box && box.group === null) return box;
  if (state.region) return revealInRegion(nodeId);
  for (const g of containersOf(nodeId)) if (state.vm || state.scopes.includes(g)) state.expanded.add(g);
  await refreshView();
  return boxOf(nodeId);
}

// Expand all of a big graph: a node whose box is not loaded here is asked where it is
// (GET /locate: its box's place in the whole layout), the camera goes there and the region
// there is loaded. An older server: the camera goes to the block holding it (via the group
// tree), zoomed so that it fills the view, and loads that region; a block inside it may come
// next (a few rounds).
async function revealInRegion(nodeId) {
  const at = await api.locate(state.run, state.graph, nodeId, state.view.key).catch(() => null);
  if (at) {
    const { cam } = main, k = Math.max(cam.k, 0.8);
    main.cam = { k, x: at.x - main.viewWidth / (2 * k), y: at.y - main.viewHeight / (2 * k) };
    main.draw();
    await settleRegion();
    return boxOf(nodeId);
  }
  for (let round = 0; round < 6; round++) {
    const box = boxOf(nodeId);
    if (box && box.group === null) return box;
    const block = blockOf(nodeId);
    if (!block) return null;
    const k = Math.min(0.8, 0.9 * Math.min(main.viewWidth / block.w, main.viewHeight / block.h));
    main.centerOn(block.id, k);
    await settleRegion();
  }
  return boxOf(nodeId);
}

export async function select(nodeId) {
  if (!knownNode(nodeId)) {
    renderMessage($("panel"), `no node #${nodeId} in this graph`, "fail");
    return;
  }
  const box = await reveal(nodeId);
  state.selected = nodeId;
  main.selected = box ? box.id : null;
  if (box) main.centerOn(box.id);
  main.draw();
  updateURL();
  try {
    const detail = await api.node(state.run, state.graph, nodeId);
    renderNode($("panel"), detail, panelContext());
  } catch (err) {
    renderMessage($("panel"), String(err), "fail");
  }
}

export function panelContext() {
  return { select, toggle, figures, findings: state.findings, skips: state.skips, report: state.report, checked: state.checked, diff: state.diff };
}

// A value's heatmap (downsampled by the server) and histogram, for values cut by the page limit.
function figures(nodeId, which) {
  return Promise.all([api.heatmap(state.run, state.graph, nodeId, which), api.histogram(state.run, state.graph, nodeId, which)]);
}

export async function toggle(group) {
  if (state.expanded.has(group) || state.expandAll) await ensureTree(); // collapsing: groups below
  if (state.expandAll) state.expanded = new Set(state.scopes); // "all" made explicit, then edited
  state.expandAll = false;
  if (state.expanded.has(group)) {
    for (const g of groupsBelow(group)) state.expanded.delete(g);
  } else {
    state.expanded.add(group);
  }
  await refreshView();
  updateURL();
}

export async function activate(box) {
  if (box.group !== null) await toggle(box.group);
  else if (box.node !== null && box.node !== undefined) await select(box.node);
}

export function clickBox(box) {
  if (!box) return;
  if (box.kind === "stub" && box.node !== null) return select(box.node); // jump to the other end
  if (box.node !== null && box.node !== undefined && box.group === null) return select(box.node);
  main.selected = box.id;
  main.draw();
  renderBox($("panel"), box, panelContext());
}

// -- search ---------------------------------------------------------------------------------------
// The boxes showing the hits (after a re-layout too: box ids are stable, boxes may be new).
export function markHits() {
  main.hits = new Set(state.hits.map((id) => (boxOf(id) || blockOf(id))?.id).filter(Boolean));
  main.draw();
}

// Search on the server when it has the view model (the records need not be here), else here.
async function searchServer(q) {
  const seq = (state.searchSeq = (state.searchSeq || 0) + 1);
  $("hits").textContent = "loading…";
  const res = await api.search(state.run, state.graph, q, state.view.key);
  if (seq !== state.searchSeq) return; // a later keystroke asked again
  // "#12" or "12" also names node 12
  const id = Number(q.replace(/^#/, ""));
  const byId = /^#?\d+$/.test(q) && knownNode(id) && !res.nodes.includes(id);
  state.hits = byId ? [id, ...res.nodes] : res.nodes;
  main.hits = new Set(Object.keys(res.boxes));
  if (byId) markHits();
  main.draw();
  $("hits").textContent = `${res.total + (byId ? 1 : 0)} hits`;
  performance.mark("tpx:hits");
}

export function search(text) {
  const q = text.trim().toLowerCase();
  state.hits = [];
  state.hit = -1;
  if (q && state.vm) return searchServer(text.trim());
  if (q && !state.nodesLoaded) {
    // The node records are still on their way: say so (not "0 hits"); load.js searches again.
    $("hits").textContent = "loading…";
    return;
  }
  if (q) {
    const id = q.startsWith("#") ? Number(q.slice(1)) : Number(q);
    for (const n of state.nodes) {
      const fields = [n.op || "", n.name, n.title || "", n.scope, n.source || "", n.kind];
      if ((Number.isInteger(id) && n.id === id) || fields.some((f) => f.toLowerCase().includes(q))) state.hits.push(n.id);
    }
  }
  main.hits = new Set(state.hits.map((id) => boxOf(id)?.id).filter(Boolean));
  main.draw();
  $("hits").textContent = q ? `${state.hits.length} hits` : "";
}

export async function nextHit(step) {
  if (!state.hits.length) return;
  state.hit = (state.hit + step + state.hits.length) % state.hits.length;
  await select(state.hits[state.hit]);
  markHits();
  $("hits").textContent = `${state.hit + 1} / ${state.hits.length}`;
}

export async function orderStep(delta) {
  await ensureRecords();
  if (!state.order.length) return;
  const i = state.order.indexOf(state.selected);
  const next = i < 0 ? 0 : Math.min(state.order.length - 1, Math.max(0, i + delta));
  select(state.order[next]);
}
