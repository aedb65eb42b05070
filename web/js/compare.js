// Comparing this graph with another: side by side (a second view) or overlaid (boxes coloured by
// how much they differ), with the saved-bytes memory lane of both in the footer.

import { $, api, main, state, status, views } from "./app.js";
import { ancestors, boxOf, toDrawable } from "./boxes.js";
import { colourBy, themeColors } from "./colors.js";
import { applyColour, showLegend } from "./colour.js";
import { GraphView } from "./graph-view.js";
import { bytes, fmt } from "./panel.js";
import { ensureRecords } from "./load.js";
import { viewOfLayout } from "./vm.js";
import { select } from "./picking.js";
import { updateURL } from "./url.js";

export async function showCompare(spec) {
  state.compare = spec;
  await ensureRecords();
  const mode = $("compare-mode").value;
  const diff = await api.diff({ run: state.run, graph: state.graph }, spec);
  // every matched node (not only those that differ) for the memory lane
  const all = await api.diff({ run: state.run, graph: state.graph }, spec, false);
  state.diff = new Map(diff.nodes.filter((n) => n.id !== null).map((n) => [n.id, n]));
  state.diffAdded = diff.nodes.filter((n) => n.id === null);
  drawMemoryLane(all.nodes, diff);
  updateURL();
  status(compareSummary(spec, diff));
  $("stage-b").hidden = mode !== "side";
  $("main").classList.toggle("compare", mode === "side");
  const scale = diffScale(boxOf);
  main.fill = scale.fill;
  showLegend({ ...scale, key: "diff", title: "difference" });
  if (mode === "side") await showOther(spec);
  main.resize();
  // The left view keeps its half of the page: fitted again, not clipped at the old width.
  if (mode === "side") main.fit();
  main.draw();
  document.body.dataset.compared = mode;
}

// A renamed op matches nothing: it counts as one removed plus one added, not as a change.
function compareSummary(spec, diff) {
  const changed = diff.changed - diff.added - diff.removed;
  return `compared with ${spec.run}/${spec.graph}: ${changed} changed, ${diff.added} added, ${diff.removed} removed · max |Δ output| ${fmt(diff.max_output_diff)} · max |Δ grad| ${fmt(diff.max_grad_diff)}`;
}

// Boxes coloured by how much their nodes differ; removed nodes (only here) in the fail colour.
function diffScale(boxFor) {
  const values = new Map(), removed = new Set();
  for (const [id, d] of state.diff) {
    const box = boxFor(id, d);
    if (!box) continue;
    if (d.status === "removed") removed.add(box.id);
    const v = d.status === "same" ? 0 : Math.max(Number(d.output_diff) || 0, Number(d.grad_diff) || 0, 1e-12);
    values.set(box.id, Math.max(values.get(box.id) ?? 0, v));
  }
  const scale = colourBy(values, $("scale").value);
  for (const id of removed) scale.fill.set(id, themeColors().fail);
  return scale;
}

// The compared graph in the right half, coloured the same way; nodes only there (added) in
// the "ok" colour. Its boxes are found by node id, or by the scope of the matched node here.
async function showOther(spec) {
  if (!views.other) {
    views.other = new GraphView($("canvas-b"));
    views.other.on("click", (box) => box && box.node !== null && select(box.node));
  }
  // The same groups opened on both sides (ids come from scope paths: the same in both graphs).
  const view = viewOfLayout(await api.layout(spec.run, spec.graph, { expanded: [...state.expanded] }), [...state.expanded]);
  const byNode = new Map(), byScope = new Map();
  for (const v of view.nodes) {
    if (v.kind === "scope") byScope.set(state.vm ? v.id.replace(/^s:/, "") : v.scope, v);
    else if (v.node !== null && v.node !== undefined && v.kind !== "stub") byNode.set(v.node, v);
  }
  const boxB = (idB, scope) => byNode.get(idB) || ancestors(scope || "").reverse().map((s) => byScope.get(s)).find(Boolean);
  const scale = diffScale((id, d) => (d.id_b === null ? null : boxB(d.id_b, state.byNode.get(id)?.scope)));
  for (const d of state.diffAdded) {
    const box = byNode.get(d.id_b);
    if (box) scale.fill.set(box.id, themeColors().ok);
  }
  views.other.setGraph(toDrawable(view));
  views.other.fill = scale.fill;
  views.other.resize();
  views.other.fit();
  $("title-b").textContent = `${spec.run} / graph ${spec.graph}`;
  $("title-a").textContent = `${state.run} / graph ${state.graph}`;
}

// A deep link "compare=run/graph" (as tpx-inspect ab -o prints it): overlay mode, the node
// named by the link (the first divergence) selected.
export async function openCompare(spec, node) {
  const cut = spec.lastIndexOf("/");
  const target = { run: spec.slice(0, cut), graph: Number(spec.slice(cut + 1)) };
  $("compare-mode").value = "overlay";
  $("compare").value = `${target.run}\u0000${target.graph}`;
  await showCompare(target);
  if (node !== null) await select(node);
}

// Saved bytes still held at each position of the backward order (each node releases its own
// when it runs), for this graph and the compared one, as two lines.
function drawMemoryLane(nodes, diff) {
  const lane = $("memory-lane");
  const byId = new Map(nodes.filter((n) => n.id !== null).map((n) => [n.id, n]));
  const order = state.order.filter((id) => byId.has(id));
  let a = nodes.reduce((s, n) => s + (n.saved_bytes_a || 0), 0);
  let b = nodes.reduce((s, n) => s + (n.saved_bytes_b || 0), 0);
  const top = Math.max(a, b, 1);
  const pa = [a], pb = [b];
  for (const id of order) {
    a -= byId.get(id).saved_bytes_a || 0;
    b -= byId.get(id).saved_bytes_b || 0;
    pa.push(a);
    pb.push(b);
  }
  const w = 240, hgt = 28, n = Math.max(pa.length - 1, 1);
  const line = (pts) => pts.map((v, i) => `${((i / n) * w).toFixed(1)},${(hgt - (v / top) * hgt).toFixed(1)}`).join(" ");
  const svg = `<svg width="${w}" height="${hgt}" viewBox="0 0 ${w} ${hgt}" role="img" aria-label="saved bytes over the backward order">` +
    `<polyline class="lane-a" fill="none" stroke="currentColor" points="${line(pa)}"/>` +
    `<polyline class="lane-b" fill="none" stroke="#d9480f" stroke-dasharray="3 2" points="${line(pb)}"/></svg>`;
  // NOTE: per-node bytes; the peaks count a buffer that several nodes save once
  const peaks = `peak this ${bytes(diff.peak_saved_bytes_a)} · compared ${bytes(diff.peak_saved_bytes_b)}`;
  lane.innerHTML = `${overridesHere()}saved bytes over backward (${peaks}) ${svg}`;
  lane.dataset.totalA = String(pa[0]);
  lane.dataset.totalB = String(pb[0]);
  lane.dataset.peakA = String(diff.peak_saved_bytes_a);
  lane.dataset.peakB = String(diff.peak_saved_bytes_b);
  lane.hidden = false;
}

// The overrides (tp.override_rule / p10.override_kernel) that computed nodes of this graph.
function overridesHere() {
  const counts = new Map();
  for (const n of state.nodes) {
    for (const [kind, fn] of Object.entries(n.overrides || {})) {
      const key = `${kind} of ${n.op}: ${fn}`;
      counts.set(key, (counts.get(key) || 0) + 1);
    }
  }
  if (!counts.size) return "";
  const items = [...counts].map(([k, c]) => `${k} (${c} node${c > 1 ? "s" : ""})`);
  return `<span class="overrides">overrides here: ${items.join("; ").replace(/&/g, "&amp;").replace(/</g, "&lt;")}</span> · `;
}

export function clearCompare() {
  $("memory-lane").hidden = true;
  state.compare = null;
  state.diff = null;
  $("stage-b").hidden = true;
  $("main").classList.remove("compare");
  $("title-a").textContent = "";
  main.resize();
  applyColour();
  updateURL();
}
