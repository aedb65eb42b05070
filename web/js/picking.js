// Picking: selecting a node (revealing its folded scopes), toggling scopes, clicks on boxes,
// search and its hits, and stepping through the backward order.

import { $, api, main, state } from "./app.js";
import { ancestors, boxOf } from "./boxes.js";
import { refreshView } from "./load.js";
import { renderBox, renderMessage, renderNode } from "./panel.js";
import { updateURL } from "./url.js";

export async function reveal(nodeId) {
  const box = boxOf(nodeId);
  if (box && box.kind !== "scope") return box;
  const scope = state.byNode.get(nodeId)?.scope || "";
  for (const s of ancestors(scope)) if (state.scopes.includes(s)) state.expanded.add(s);
  await refreshView();
  return boxOf(nodeId);
}

export async function select(nodeId) {
  if (!state.byNode.has(nodeId)) {
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
  return { select, toggle, findings: state.findings, skips: state.skips, report: state.report, checked: state.checked, diff: state.diff };
}

export async function toggle(scope) {
  if (state.expanded.has(scope)) {
    for (const s of [...state.expanded]) if (s === scope || s.startsWith(scope + ".")) state.expanded.delete(s);
  } else {
    state.expanded.add(scope);
  }
  await refreshView();
  updateURL();
}

export async function activate(box) {
  if (box.kind === "scope") await toggle(box.scope);
  else if (box.node !== null && box.node !== undefined) await select(box.node);
}

export function clickBox(box) {
  if (!box) return;
  if (box.kind === "stub" && box.node !== null) return select(box.node); // jump to the other end
  if (box.node !== null && box.node !== undefined && box.kind !== "scope") return select(box.node);
  main.selected = box.id;
  main.draw();
  renderBox($("panel"), box, panelContext());
}

// -- search ---------------------------------------------------------------------------------------
export function search(text) {
  const q = text.trim().toLowerCase();
  state.hits = [];
  state.hit = -1;
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
  main.hits = new Set(state.hits.map((id) => boxOf(id)?.id).filter(Boolean));
  $("hits").textContent = `${state.hit + 1} / ${state.hits.length}`;
}

export function orderStep(delta) {
  if (!state.order.length) return;
  const i = state.order.indexOf(state.selected);
  const next = i < 0 ? 0 : Math.min(state.order.length - 1, Math.max(0, i + delta));
  select(state.order[next]);
}
