// The viewer application: picks a run and graph, shows the laid-out DAG, and wires search,
// scopes, details, backward playback, colour-by, checks, comparison, export, deep links and keys.

import { http, embedded } from "./api.js";
import { colourBy, legendGradient, resetThemeCache } from "./colors.js";
import { canvasPNG, download, toSVG, toStandaloneHTML } from "./exporters.js";
import { GraphView } from "./graph-view.js";
import { bytes, fmt, renderBox, renderMessage, renderNode } from "./panel.js";
import { initPlan } from "./plan.js";

const $ = (id) => document.getElementById(id);
const api = window.TPX_EMBED ? embedded(window.TPX_EMBED) : http;

const state = {
  run: null, graph: null, expanded: new Set(), scopes: [], view: null, nodes: [], byNode: new Map(),
  order: [], selected: null, hits: [], hit: -1, findings: new Map(), skips: new Map(), report: null, checked: false,
  diff: null, compare: null, play: { index: -1, timer: null }, colour: "kind", graphs: [], stub: "",
  boxByNode: new Map(), boxByScope: new Map(),
  // Load generations: a pick made while an earlier one is still loading wins; stale replies are
  // dropped instead of overwriting what the user asked for last.
  loadSeq: 0, viewSeq: 0,
};

const main = new GraphView($("canvas"));
let other = null; // the second view when comparing side by side

function status(text) {
  $("status").textContent = text;
}

// -- loading -------------------------------------------------------------------------------------
async function loadRuns() {
  const runs = await api.runs();
  $("run").replaceChildren(...runs.map((r) => new Option(`${r.name} (${r.status}, ${r.graphs} graphs)`, r.id)));
  return runs;
}

async function fillCompare(runs) {
  // Every graph of every run can be compared; listed after the first frame is drawn.
  const options = [new Option("—", "")];
  for (const r of runs) {
    const list = await api.graphs(r.id);
    for (const g of list.graphs) options.push(new Option(`${r.name} / graph ${g.id} (${g.detail})`, `${r.id}\u0000${g.id}`));
  }
  $("compare").replaceChildren(...options);
  document.body.dataset.compareReady = "1";
}

async function selectRun(run, graph = null) {
  const token = ++state.loadSeq;
  state.run = run;
  $("run").value = run;
  const list = await api.graphs(run);
  if (state.run !== run) return; // another run was picked meanwhile
  state.graphs = list.graphs;
  $("graph").replaceChildren(...list.graphs.map((g) => new Option(`graph ${g.id}: ${g.detail} · ${g.nodes} nodes${g.finite ? "" : " · non-finite"}`, g.id)));
  if (token !== state.loadSeq) {
    // A graph was picked while the list loaded: keep that pick.
    if (state.graph !== null) $("graph").value = String(state.graph);
    return;
  }
  if (!list.graphs.length) {
    status("this run recorded no graph yet");
    return;
  }
  await selectGraph(graph ?? list.graphs[0].id);
}

async function selectGraph(graph, { keepExpanded = false, node = null } = {}) {
  const token = ++state.loadSeq;
  state.graph = Number(graph);
  $("graph").value = String(graph);
  if (!keepExpanded) state.expanded = new Set();
  state.findings = new Map();
  state.skips = new Map();
  state.report = null;
  state.checked = false;
  showVerdict(null);
  state.diff = null;
  stopPlay();
  delete document.body.dataset.loaded;
  state.nodes = [];
  state.byNode = new Map();
  state.order = [];
  // The first frame comes first; the node records (search, colours, playback) load after it,
  // so that they do not compete with the layout request on the server.
  await refreshView();
  if (token !== state.loadSeq) return; // superseded by a later pick
  main.fit();
  const [nodes, order] = await Promise.all([api.nodes(state.run, state.graph), api.backward(state.run, state.graph)]);
  if (token !== state.loadSeq) return;
  state.nodes = nodes.nodes;
  state.byNode = new Map(state.nodes.map((n) => [n.id, n]));
  state.order = order.nodes.map((n) => n.id);
  document.body.dataset.loaded = `${state.run}/${state.graph}`;
  applyColour();
  if (node !== null) await select(node);
  if (state.compare) await showCompare(state.compare);
  updateURL();
}

async function refreshView() {
  const seq = ++state.viewSeq;
  const t0 = performance.now();
  const view = await api.view(state.run, state.graph, [...state.expanded], state.stub);
  if (seq !== state.viewSeq) return false; // a newer layout was asked for: drop this one
  state.view = view;
  state.scopes = view.scopes;
  indexView(view);
  main.setGraph(toDrawable(view));
  applyColour();
  applyMarks();
  const ms = (performance.now() - t0).toFixed(0);
  const g = state.graphs.find((x) => x.id === state.graph);
  status(`${view.nodes.length} boxes (${g ? g.nodes : "?"} nodes) · layout ${view.engine}${view.cached ? " (cached)" : ""} · ${ms} ms${view.note ? " · " + view.note : ""}`);
  document.body.dataset.ready = `${state.run}/${state.graph}/${[...state.expanded].join(",")}`;
  return true;
}

function toDrawable(view) {
  const nodes = view.nodes.map((v) => {
    const [label, ...rest] = v.label.split("\n");
    return { ...v, label, sublabel: rest.join(" ") };
  });
  const edges = view.edges.map((e) => ({ source: e.src, target: e.dst, label: e.label, points: e.points }));
  return { nodes, edges, width: view.width, height: view.height };
}

// -- node lookup ---------------------------------------------------------------------------------
function indexView(view) {
  // Lookups for boxOf: real nodes drawn as themselves, and folded scopes by name.
  state.boxByNode = new Map();
  state.boxByScope = new Map();
  for (const v of view.nodes) {
    if (v.kind === "scope") state.boxByScope.set(v.scope, v);
    else if (v.kind !== "stub" && v.node !== null && v.node !== undefined) state.boxByNode.set(v.node, v);
  }
}

function boxOf(nodeId) {
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

function ancestors(scope) {
  const parts = scope ? scope.split(".") : [];
  return parts.map((_, i) => parts.slice(0, i + 1).join("."));
}

async function reveal(nodeId) {
  const box = boxOf(nodeId);
  if (box && box.kind !== "scope") return box;
  const scope = state.byNode.get(nodeId)?.scope || "";
  for (const s of ancestors(scope)) if (state.scopes.includes(s)) state.expanded.add(s);
  await refreshView();
  return boxOf(nodeId);
}

async function select(nodeId) {
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

function panelContext() {
  return { select, toggle, findings: state.findings, skips: state.skips, report: state.report, checked: state.checked, diff: state.diff };
}

async function toggle(scope) {
  if (state.expanded.has(scope)) {
    for (const s of [...state.expanded]) if (s === scope || s.startsWith(scope + ".")) state.expanded.delete(s);
  } else {
    state.expanded.add(scope);
  }
  await refreshView();
  updateURL();
}

async function activate(box) {
  if (box.kind === "scope") await toggle(box.scope);
  else if (box.node !== null && box.node !== undefined) await select(box.node);
}

main.on("click", async (box) => {
  if (!box) return;
  if (box.kind === "stub" && box.node !== null) return select(box.node); // jump to the other end
  if (box.node !== null && box.node !== undefined && box.kind !== "scope") return select(box.node);
  main.selected = box.id;
  main.draw();
  renderBox($("panel"), box, panelContext());
});
main.on("activate", activate);

// -- search ---------------------------------------------------------------------------------------
function search(text) {
  const q = text.trim().toLowerCase();
  state.hits = [];
  state.hit = -1;
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

async function nextHit(step) {
  if (!state.hits.length) return;
  state.hit = (state.hit + step + state.hits.length) % state.hits.length;
  await select(state.hits[state.hit]);
  main.hits = new Set(state.hits.map((id) => boxOf(id)?.id).filter(Boolean));
  $("hits").textContent = `${state.hit + 1} / ${state.hits.length}`;
}

// -- colour by a per-node value ------------------------------------------------------------------
function nodeValue(n, key) {
  switch (key) {
    case "grad_norm": return n.grad_norm === null ? NaN : Number(n.grad_norm);
    case "saved_bytes": return n.saved_bytes;
    case "backward_time": return n.backward_seconds ?? NaN;
    case "nonfinite": return n.nonfinite ? 1 : 0;
    case "check_error": return (state.findings.get(n.id) || []).length;
    default: return NaN;
  }
}

function applyColour() {
  const key = state.colour;
  if (key === "kind") {
    main.fill = null;
    $("legend").hidden = true;
    main.draw();
    return;
  }
  const values = new Map();
  for (const n of state.nodes) {
    const box = boxOf(n.id);
    if (!box) continue;
    const v = nodeValue(n, key);
    const prev = values.get(box.id);
    values.set(box.id, prev === undefined || !(prev >= v) ? v : prev); // scopes show their max
  }
  const scale = colourBy(values);
  main.fill = scale.fill;
  $("legend").hidden = false;
  $("legend-bar").style.background = legendGradient();
  $("legend-min").textContent = fmt(scale.min);
  $("legend-max").textContent = fmt(scale.max);
  $("legend-label").textContent = `${$("colour").selectedOptions[0].text}${scale.log ? " (log)" : ""}`;
  main.draw();
}

// -- marks: checks, playback, comparison ----------------------------------------------------------
function applyMarks() {
  main.marked = new Map();
  // Skipped first, so that a box holding both a skipped and a failing node rings as failing.
  for (const id of state.skips.keys()) {
    const box = boxOf(id);
    if (box && !state.findings.has(id)) main.marked.set(box.id, "skipped");
  }
  for (const id of state.findings.keys()) {
    const box = boxOf(id);
    if (box) main.marked.set(box.id, "fail");
  }
  const i = state.play.index;
  if (i >= 0 && i < state.order.length) {
    const id = state.order[i];
    const box = boxOf(id);
    for (const e of state.byNode.get(id).inputs) {
      const b = e.src === null ? null : boxOf(e.src);
      if (b) main.marked.set(b.id, "accum");
    }
    if (box) main.marked.set(box.id, "active");
  }
  main.draw();
}

async function step() {
  if (!state.order.length) return;
  state.play.index = (state.play.index + 1) % state.order.length;
  const id = state.order[state.play.index];
  await reveal(id);
  applyMarks();
  const box = boxOf(id);
  if (box) main.centerOn(box.id, main.cam.k);
  const n = state.byNode.get(id);
  status(`backward step ${state.play.index + 1}/${state.order.length}: #${id} ${n.title || n.name} — gradients flow to ${n.inputs.filter((e) => e.src !== null).map((e) => "#" + e.src).join(", ") || "nothing"}`);
  document.body.dataset.playStep = String(state.play.index);
}

function play() {
  if (state.play.timer) return stopPlay();
  $("play").textContent = "Pause";
  // About eight seconds for a whole pass, between 30 and 400 ms a step.
  const every = Math.min(400, Math.max(30, 8000 / Math.max(1, state.order.length)));
  state.play.timer = setInterval(() => {
    if (state.play.index >= state.order.length - 1) stopPlay();
    else step();
  }, every);
}

function stopPlay() {
  clearInterval(state.play.timer);
  state.play.timer = null;
  $("play").textContent = "Play backward";
}

// Statuses, summaries and the headline come from the server, which derives them from the same
// report the CLI prints: the viewer adds no verdict of its own.
function noteNode(map, id, entry) {
  if (id === null || id === undefined) return;
  if (!map.has(id)) map.set(id, []);
  map.get(id).push(entry);
}

function collectVerdicts(report) {
  state.findings = new Map();
  state.skips = new Map();
  for (const c of report.checks) {
    for (const f of c.findings) noteNode(state.findings, f.node, { ...f, check: c.name });
    for (const r of c.reasons) for (const id of r.nodes) noteNode(state.skips, id, { check: c.name, reason: r.reason });
  }
  // Verdicts of the live check made while the run was recorded (custom Functions included).
  for (const v of report.live || []) {
    if (v.status === "fail") noteNode(state.findings, v.node, { check: `${v.check} (live)`, message: v.message, node: v.node });
    else if (v.status === "skipped") noteNode(state.skips, v.node, { check: `${v.check} (live)`, reason: v.message });
  }
}

// The verdict stays in the status bar until the graph changes (other messages come and go).
function showVerdict(report) {
  const el = $("check-status");
  el.hidden = !report;
  el.textContent = report ? report.headline : "";
  el.title = el.textContent;
  el.className = report ? { pass: "ok", fail: "fail", skipped: "skipped", partial: "skipped" }[report.status] : "";
  if (!report) delete document.body.dataset.checked;
}

async function runChecks() {
  status("running checks on the saved values…");
  const report = await api.checks(state.run, state.graph);
  state.report = report;
  collectVerdicts(report);
  state.checked = true;
  applyMarks();
  applyColour();
  status(report.headline);
  showVerdict(report);
  document.body.dataset.checked = report.status;
  if (state.findings.size) {
    const rank = (id) => { const i = state.order.indexOf(id); return i < 0 ? Infinity : i; };
    const first = [...state.findings.keys()].sort((a, b) => rank(a) - rank(b))[0];
    await select(first);
    status(report.headline); // again: the selection's layout message replaced it
  }
}

async function showCompare(spec) {
  state.compare = spec;
  const mode = $("compare-mode").value;
  const diff = await api.diff({ run: state.run, graph: state.graph }, spec);
  // every matched node (not only those that differ) for the memory lane
  const all = await api.diff({ run: state.run, graph: state.graph }, spec, false);
  state.diff = new Map(diff.nodes.map((n) => [n.id, n]));
  drawMemoryLane(all.nodes, diff);
  updateURL();
  status(`compared with ${spec.run}/${spec.graph}: ${diff.changed} changed, ${diff.added} added, ${diff.removed} removed · max |Δ output| ${fmt(diff.max_output_diff)} · max |Δ grad| ${fmt(diff.max_grad_diff)}`);
  $("stage-b").hidden = mode !== "side";
  $("main").classList.toggle("compare", mode === "side");
  if (mode === "side") {
    other ||= new GraphView($("canvas-b"));
    other.on("click", (box) => box && box.node !== null && select(box.node));
    const view = await api.view(spec.run, spec.graph, [...state.expanded]);
    other.setGraph(toDrawable(view));
    other.resize();
    other.fit();
    $("title-b").textContent = `${spec.run} / graph ${spec.graph}`;
    main.fill = null;
  } else {
    const values = new Map();
    for (const [id, d] of state.diff) {
      const box = boxOf(id);
      if (box) values.set(box.id, d.status === "same" ? 0 : Math.max(Number(d.output_diff) || 0, Number(d.grad_diff) || 0, 1e-12));
    }
    main.fill = colourBy(values).fill;
  }
  main.resize();
  main.draw();
  document.body.dataset.compared = mode;
}

// A deep link "compare=run/graph" (as tpx-inspect ab -o prints it): overlay mode, the node
// named by the link (the first divergence) selected.
async function openCompare(spec, node) {
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

function clearCompare() {
  $("memory-lane").hidden = true;
  state.compare = null;
  state.diff = null;
  $("stage-b").hidden = true;
  $("main").classList.remove("compare");
  main.resize();
  applyColour();
  updateURL();
}

// -- export ----------------------------------------------------------------------------------------
async function exportAs(format) {
  const base = `${state.run}-graph${state.graph}`;
  if (format === "svg") download(`${base}.svg`, toSVG(main.graph, main.fill), "image/svg+xml");
  else if (format === "png") download(`${base}.png`, await canvasPNG(main.canvas), "image/png");
  else if (format === "html") download(`${base}.html`, toStandaloneHTML(main.graph, state.nodes, `${state.run} / graph ${state.graph}`), "text/html");
  else {
    const url = api.exportUrl(state.run, state.graph, format);
    if (!url) return status(`${format} export needs the server`);
    const res = await fetch(url);
    if (!res.ok) return status(`export failed: ${res.status}`);
    download(`${base}.${format}`, await res.blob(), res.headers.get("content-type"));
  }
  status(`exported ${format}`);
}

// -- deep links ------------------------------------------------------------------------------------
function updateURL() {
  const p = new URLSearchParams();
  if (state.run !== null) p.set("run", state.run);
  if (state.graph !== null) p.set("graph", state.graph);
  if (state.selected !== null) p.set("node", state.selected);
  if (state.expanded.size) p.set("expand", [...state.expanded].join(","));
  if (state.stub) p.set("stub", state.stub);
  if (state.compare) p.set("compare", `${state.compare.run}/${state.compare.graph}`);
  history.replaceState(null, "", "#" + p.toString());
}

function readURL() {
  const p = new URLSearchParams(location.hash.slice(1));
  return {
    run: p.get("run"),
    graph: p.has("graph") ? Number(p.get("graph")) : null,
    node: p.has("node") ? Number(p.get("node")) : null,
    expand: p.get("expand") ? p.get("expand").split(",") : [],
    stub: p.get("stub") || "",
    compare: p.get("compare"), // "run/graph": open in compare mode (tpx-inspect ab -o)
  };
}

// -- keyboard, theme, controls ---------------------------------------------------------------------
function orderStep(delta) {
  if (!state.order.length) return;
  const i = state.order.indexOf(state.selected);
  const next = i < 0 ? 0 : Math.min(state.order.length - 1, Math.max(0, i + delta));
  select(state.order[next]);
}

function setTheme(theme) {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem("tpx-theme", theme);
  resetThemeCache();
  main.draw();
  if (other) other.draw();
}

document.addEventListener("keydown", (ev) => {
  const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
  if (typing) {
    if (ev.key === "Escape") document.activeElement.blur();
    return;
  }
  const keys = {
    "/": () => $("search").focus(),
    n: () => nextHit(1),
    N: () => nextHit(-1),
    j: () => orderStep(1),
    k: () => orderStep(-1),
    f: () => main.fit(),
    "+": () => main.zoomBy(1.25),
    "=": () => main.zoomBy(1.25),
    "-": () => main.zoomBy(0.8),
    ArrowLeft: () => main.panBy(60, 0),
    ArrowRight: () => main.panBy(-60, 0),
    ArrowUp: () => main.panBy(0, 60),
    ArrowDown: () => main.panBy(0, -60),
    e: () => $("expand-all").click(),
    c: () => $("collapse-all").click(),
    p: () => play(),
    ".": () => step(),
    x: () => runChecks(),
    t: () => $("theme").click(),
    Escape: () => { state.selected = null; main.selected = null; main.draw(); },
    Enter: () => {
      const box = main.graph.nodes.find((b) => b.id === main.selected);
      if (box) activate(box);
    },
  };
  const fn = keys[ev.key];
  if (fn && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
    ev.preventDefault();
    fn();
  }
});

$("run").addEventListener("change", (e) => selectRun(e.target.value));
$("graph").addEventListener("change", (e) => selectGraph(e.target.value));
$("search").addEventListener("input", (e) => search(e.target.value));
$("search").addEventListener("keydown", (e) => {
  if (e.key === "Enter") {
    e.preventDefault();
    nextHit(e.shiftKey ? -1 : 1);
  }
});
$("next-hit").addEventListener("click", () => nextHit(1));
$("prev-hit").addEventListener("click", () => nextHit(-1));
$("fit").addEventListener("click", () => main.fit());
$("expand-all").addEventListener("click", async () => {
  state.expanded = new Set(state.scopes);
  await refreshView();
  main.fit();
  updateURL();
});
$("collapse-all").addEventListener("click", async () => {
  state.expanded = new Set();
  await refreshView();
  main.fit();
  updateURL();
});
$("stub").addEventListener("change", async (e) => {
  state.stub = e.target.value;
  await refreshView();
  updateURL();
});
$("colour").addEventListener("change", (e) => {
  state.colour = e.target.value;
  applyColour();
});
$("play").addEventListener("click", play);
$("step").addEventListener("click", step);
$("checks").addEventListener("click", runChecks);
$("compare").addEventListener("change", (e) => {
  if (!e.target.value) return clearCompare();
  const [run, graph] = e.target.value.split("\u0000");
  showCompare({ run, graph: Number(graph) });
});
$("compare-mode").addEventListener("change", () => state.compare && showCompare(state.compare));
$("export").addEventListener("change", async (e) => {
  const format = e.target.value;
  e.target.value = "";
  if (format) await exportAs(format);
});
$("theme").addEventListener("click", () => setTheme(document.documentElement.dataset.theme === "dark" ? "light" : "dark"));

window.addEventListener("error", (e) => status(`error: ${e.message}`));
window.addEventListener("unhandledrejection", (e) => status(`error: ${e.reason}`));

async function start() {
  const stored = localStorage.getItem("tpx-theme");
  setTheme(stored || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
  const runs = await loadRuns();
  if (!runs.length) {
    status("no runs: start the server on a run folder (tpx-inspect serve tpx-runs/...)");
    return;
  }
  const link = readURL();
  const run = runs.some((r) => r.id === link.run) ? link.run : runs[0].id;
  state.expanded = new Set(link.expand);
  state.stub = link.stub;
  $("stub").value = link.stub;
  if (link.graph !== null) {
    state.run = run;
    $("run").value = run;
    const list = await api.graphs(run);
    state.graphs = list.graphs;
    $("graph").replaceChildren(...list.graphs.map((g) => new Option(`graph ${g.id}: ${g.detail} · ${g.nodes} nodes`, g.id)));
    await selectGraph(link.graph, { keepExpanded: true, node: link.node });
  } else {
    await selectRun(run);
  }
  await fillCompare(runs).catch((err) => status(`error: ${err}`));
  if (link.compare) await openCompare(link.compare, link.node);
  const live = runs.find((r) => r.id === run)?.live;
  if (live) follow(run);
}

async function follow(run) {
  // Live runs (tpx-inspect run --serve): new graphs appear as they are recorded.
  while (state.run === run) {
    const feed = await api.feed(run, state.graphs.length);
    for (const g of feed.new) {
      state.graphs.push(g);
      $("graph").append(new Option(`graph ${g.id}: ${g.detail} · ${g.nodes} nodes`, g.id));
    }
    if (feed.new.length) status(`live: ${state.graphs.length} graphs recorded`);
    if (feed.status !== "running" && !feed.new.length) break;
  }
}

// A pasted deep link (or the back button) changes the hash: show what it names.
window.addEventListener("hashchange", async () => {
  const link = readURL();
  if (!link.run) return;
  state.expanded = new Set(link.expand);
  state.stub = link.stub;
  $("stub").value = link.stub;
  if (link.run !== state.run) await selectRun(link.run, link.graph);
  else if (link.graph !== null && link.graph !== state.graph) await selectGraph(link.graph, { keepExpanded: true, node: link.node });
  else {
    await refreshView();
    if (link.node !== null && link.node !== state.selected) await select(link.node);
  }
});

window.tpxViewer = { state, main, select, toggle, runChecks, step, boxOf };
initPlan(); // the tpx.compile plan beside the graph (web/js/plan.js)
start().catch((err) => status(`error: ${err}`));
