// Loading: the run list, a run's graphs, one graph's view at an expansion state, and the node
// records that search, colours and playback need (after the first frame).

import { $, api, main, state, status } from "./app.js";
import { ApiError } from "./api.js";
import { indexView, toDrawable } from "./boxes.js";
import { showVerdict } from "./checks-ui.js";
import { applyColour } from "./colour.js";
import { showCompare } from "./compare.js";
import { markHits, search, select } from "./picking.js";
import { applyMarks, stopPlay } from "./playback.js";
import { updateURL } from "./url.js";
import { Cancelled, cancelLayouts, fetchLayout, fetchTree, pause } from "./layouts.js";
import { regionFor } from "./region.js";
import { allGroups, setTree, viewOfLayout, viewOfWorker } from "./vm.js";

export async function loadRuns() {
  const runs = await api.runs();
  const label = runLabels(runs);
  $("run").replaceChildren(...runs.map((r) => new Option(`${label.get(r.id)} (${r.status}, ${r.graphs} graphs)`, r.id)));
  return runs;
}

// Runs of the same script share a name: those are told apart by their folder (the run id).
export function runLabels(runs) {
  const count = new Map();
  for (const r of runs) count.set(r.name, (count.get(r.name) || 0) + 1);
  return new Map(runs.map((r) => [r.id, count.get(r.name) > 1 && r.id !== r.name ? `${r.name} · ${r.id}` : r.name]));
}

export async function fillCompare(runs) {
  // Every graph of every run can be compared; listed after the first frame is drawn.
  const options = [new Option("—", "")];
  const label = runLabels(runs);
  for (const r of runs) {
    const list = await api.graphs(r.id);
    for (const g of list.graphs) options.push(new Option(`${label.get(r.id)} / graph ${g.id} (${g.detail})`, `${r.id}\u0000${g.id}`));
  }
  $("compare").replaceChildren(...options);
  document.body.dataset.compareReady = "1";
}

export function fillGraphs(graphs) {
  state.graphs = graphs;
  $("graph").replaceChildren(...graphs.map((g) => new Option(graphLabel(g), g.id)));
}

export function graphLabel(g) {
  return `graph ${g.id}: ${g.detail} · ${g.nodes} nodes${g.finite === false ? " · non-finite" : ""}`;
}

export async function selectRun(run, graph = null, node = null) {
  const token = ++state.loadSeq;
  state.run = run;
  $("run").value = run;
  const list = await api.graphs(run);
  if (state.run !== run) return; // another run was picked meanwhile
  fillGraphs(list.graphs);
  if (token !== state.loadSeq) {
    // A graph was picked while the list loaded: keep that pick.
    if (state.graph !== null) $("graph").value = String(state.graph);
    return;
  }
  if (!list.graphs.length) {
    status("this run recorded no graph yet");
    return;
  }
  await selectGraph(graph ?? list.graphs[0].id, { keepExpanded: graph !== null, node });
}

function forgetGraph() {
  state.findings = new Map();
  state.skips = new Map();
  state.report = null;
  state.checked = false;
  showVerdict(null);
  state.diff = null;
  stopPlay();
  delete document.body.dataset.loaded;
  state.nodes = [];
  state.records = null;
  state.treeLoad = null;
  setTree(null);
  state.nodesLoaded = false;
  state.byNode = new Map();
  state.order = [];
}

// Graphs up to this many nodes load every node record after the first frame; bigger ones (with
// the server's view model) ask for records when a feature needs them (search and colours are
// computed by the server).
const EAGER = 5_000;

export async function selectGraph(graph, { keepExpanded = false, node = null } = {}) {
  const token = ++state.loadSeq;
  state.graph = Number(graph);
  $("graph").value = String(graph);
  if (!keepExpanded) state.expanded = new Set();
  forgetGraph();
  // The first frame comes first: the group tree comes alongside (the server's first screen
  // needs no tree here), node records after it, so they do not compete with the layout.
  state.vm = true; // until the server answers that it has no view model
  await refreshView();
  if (token !== state.loadSeq) return; // superseded by a later pick
  main.fit();
  performance.mark("tpx:first-frame");
  document.body.dataset.interactive = `${state.run}/${state.graph}`;
  if (state.vm && $("search").value.trim()) search($("search").value);
  if (!state.graphs.some((g) => g.id === state.graph)) {
    // Opened from a link before the run's graph list: listed now, the link's graph kept.
    fillGraphs((await api.graphs(state.run)).graphs);
    if (token !== state.loadSeq) return;
    $("graph").value = String(state.graph);
  }
  const size = state.graphs.find((g) => g.id === state.graph)?.nodes ?? 0;
  $("status").textContent = $("status").textContent.replace("(? nodes)", `(${size} nodes)`);
  // The tree of a big graph is a big answer: asked when a feature needs it, or when idle, so
  // that it does not hold up the first search.
  if (size <= EAGER) await ensureTree();
  else setTimeout(() => token === state.loadSeq && ensureTree(), 3000);
  if (token !== state.loadSeq) return;
  if (!state.vm || size <= EAGER) await ensureRecords();
  if (token !== state.loadSeq) return;
  if (node !== null) await select(node);
  if (state.compare) await showCompare(state.compare);
  updateURL();
}

// The view model's group tree (which groups hold a node, which lie below a group), once.
export function ensureTree() {
  if (!state.vm) return Promise.resolve();
  if (!state.treeLoad) {
    const token = state.loadSeq;
    const inPage = () => api.tree(state.run, state.graph);
    state.treeLoad = fetchTree(api.treeUrl(state.run, state.graph), inPage).catch(() => null).then((tree) => {
      if (token !== state.loadSeq) return;
      setTree(tree);
      applyMarks();
      if (state.hits.length) markHits();
    });
  }
  return state.treeLoad;
}

// Every node record and the backward order of the shown graph, loaded once.
export function ensureRecords() {
  if (state.records) return state.records;
  const token = state.loadSeq;
  state.records = Promise.all([api.nodes(state.run, state.graph), api.backward(state.run, state.graph)]).then(([nodes, order]) => {
    if (token !== state.loadSeq) return;
    state.nodes = nodes.nodes;
    state.byNode = new Map(state.nodes.map((n) => [n.id, n]));
    state.order = order.nodes.map((n) => n.id);
    state.nodesLoaded = true;
    document.body.dataset.loaded = `${state.run}/${state.graph}`;
    applyColour();
    if ($("search").value.trim()) search($("search").value);
  });
  return state.records;
}

// Every group open: the view model is asked with one flag, not thousands of names.
export function setExpandAll() {
  state.expandAll = state.vm;
  state.expanded = new Set(allGroups());
}

export function setCollapsed() {
  state.expandAll = false;
  state.expanded = new Set(state.vm ? ["root"] : []);
}

// The view model's layout (the state in the body; nothing named: the server's first screen),
// through the layout worker (decoded and indexed off this thread).
// Expand all on a big graph is asked coarse first (frames smaller than ``coarseMinSize`` come
// as one block each: a small answer drawn at once), the whole layout after it (fillDetail).
async function fetchView() {
  if (state.vm) {
    const named = state.expandAll || state.expanded.size;
    const body = state.expandAll ? { expand_all: true } : { expanded: named ? [...state.expanded] : null };
    // a big graph with many groups open (Expand all, or most of it): a base, then regions
    const coarse = graphSize() > state.coarseFrom && (state.expandAll || state.expanded.size > state.regionalFrom);
    if (coarse) body.min_size = state.coarseMinSize;
    const early = earlyFirstScreen(body);
    if (early) {
      const res = await early;
      if (res) return viewOfLayout(res, [...state.expanded]);
    }
    const url = api.layoutUrl(state.run, state.graph);
    const got = await fetchLayout(url, body, () => api.layout(state.run, state.graph, body), coarse ? { keep: state.viewSeq } : {});
    if (got) return got.meta ? viewOfWorker(got, [...state.expanded]) : viewOfLayout(got.res, [...state.expanded]);
  }
  // NOTE: every server since round 14 has the view model (the old /view was removed)
  throw new ApiError("this server has no view-model layout: serve the run with a newer tpx-inspect");
}

// The first screen of the linked graph, asked by index.html while the modules loaded: taken
// once, when the first view asked is that state (nothing named); null otherwise.
function earlyFirstScreen(body) {
  const early = window.tpxFirstScreen;
  window.tpxFirstScreen = null;
  const first = body.expanded === null && !body.expand_all && !body.min_size;
  return early && first && early.run === state.run && early.graph === state.graph ? early.answer : null;
}

// Not known yet (the graph list comes after the first frame): counted as big.
const graphSize = () => state.graphs.find((g) => g.id === state.graph)?.nodes ?? state.tree?.nodes ?? Infinity;

// What is on screen: a cancelled layout puts the state back to it.
let shown = { expanded: new Set(), expandAll: false };

export async function refreshView() {
  const seq = ++state.viewSeq;
  const t0 = performance.now();
  const slow = setTimeout(() => seq === state.viewSeq && showPending(true), 400);
  let view;
  try {
    view = await fetchView();
  } catch (err) {
    if (!(err instanceof Cancelled)) throw err;
    if (seq === state.viewSeq) restoreShown();
    return false;
  } finally {
    clearTimeout(slow);
    if (seq === state.viewSeq) showPending(false);
  }
  if (seq !== state.viewSeq) return false; // a newer layout was asked for: drop this one
  if (view.serverExpanded && !state.expandAll) state.expanded = new Set(view.serverExpanded);
  state.region = null;
  await show(view, t0, performance.now());
  // a base kept by the worker: regions of it as the camera moves; else the whole layout
  if (view.coarse && view.drawable) state.region = { seq, key: view.key, baseMin: state.coarseMinSize, rect: null, min: Infinity, loading: null };
  else if (view.coarse) fillDetail(seq, view.key);
  return true;
}

// A layout on screen: lookups, the drawing's index, colours, marks, status.
async function show(view, t0, t1) {
  state.view = view;
  state.scopes = view.scopes;
  indexView(view);
  if (view.nodes.length > 20_000) await pause(); // a big view: the page answers in between
  const tLookups = performance.now();
  main.setGraph(view.drawable || toDrawable(view), view.packed);
  const tGraph = performance.now();
  applyColour();
  applyMarks();
  if (state.hits.length) markHits();
  const t2 = performance.now();
  const parts = { lookups: tLookups - t1, setGraph: tGraph - tLookups, marks: t2 - tGraph };
  state.timing = { fetch: t1 - t0, index: t2 - t1, parts, ...(view.ms || {}) };
  shown = { expanded: new Set(state.expanded), expandAll: state.expandAll };
  const ms = (t2 - t0).toFixed(0);
  const g = state.graphs.find((x) => x.id === state.graph);
  const coarse = view.coarse ? ` · ${view.coarse} small frames as blocks (${view.drawable ? "zoom in for their contents" : "the rest on its way"})` : "";
  status(`${view.nodes.length} boxes (${g ? g.nodes : "?"} nodes) · layout ${view.engine}${view.cached ? " (cached)" : ""} · ${ms} ms (here ${(t2 - t1).toFixed(0)} ms)${view.note ? " · " + view.note : ""}${coarse}`);
  document.body.dataset.ready = `${state.run}/${state.graph}/${state.expandAll ? "*" : [...state.expanded].join(",")}`;
}

// The whole layout of the state drawn coarse, asked again by its key (the server keeps it):
// it replaces the coarse one where the camera is, unless another layout was asked meanwhile.
async function fillDetail(seq, key) {
  const t0 = performance.now();
  const url = `${api.layoutUrl(state.run, state.graph)}?key=${encodeURIComponent(key)}`;
  let got;
  try {
    got = await fetchLayout(url, null, () => api.layoutByKey(state.run, state.graph, key));
  } catch (err) {
    if (err instanceof Cancelled) return; // stopped: the coarse layout stays
    throw err;
  }
  if (seq !== state.viewSeq || !got) return;
  await show(got.meta ? viewOfWorker(got, [...state.expanded]) : viewOfLayout(got.res, [...state.expanded]), t0, performance.now());
  if (seq === state.viewSeq) document.body.dataset.detail = String(seq);
}

// -- regions of a big Expand all -------------------------------------------------------------
// The base (every frame smaller than coarseMinSize as one block) stays; where the camera looks
// closer than the base can show, the region around the view is asked by the state's key at a
// finer min_size and drawn over the base (the worker composes them: region.js). Never the
// whole layout (35 MB at 100k nodes).

// {rect, minSize} of the region the camera needs now, or null when what is drawn will do.
export function regionWanted() {
  const r = state.region;
  if (!r || r.seq !== state.viewSeq) return null;
  const { cam } = main;
  const view = { x0: cam.x, y0: cam.y, x1: cam.x + main.viewWidth / cam.k, y1: cam.y + main.viewHeight / cam.k };
  const want = regionFor(view, cam.k);
  if (want.minSize >= r.baseMin) return null; // the base shows this zoom as well as a region
  const inside = r.rect && view.x0 >= r.rect.x0 && view.x1 <= r.rect.x1 && view.y0 >= r.rect.y0 && view.y1 <= r.rect.y1;
  return inside && want.minSize >= r.min / 2 ? null : want;
}

let regionTimer = null;

// Called on every frame drawn: a region asked once the camera rests for a moment.
export function watchRegion() {
  if (regionTimer !== null || !regionWanted()) return;
  regionTimer = setTimeout(() => {
    regionTimer = null;
    loadRegion();
  }, 120);
}

// The region the camera needs, asked and drawn (one at a time); resolves when none is needed.
export async function loadRegion() {
  const r = state.region;
  const want = regionWanted();
  if (!r || !want) return;
  if (!r.loading) r.loading = askRegion(r, want).finally(() => (r.loading = null));
  await r.loading;
  if (regionWanted()) watchRegion(); // the camera moved on meanwhile
}

// Asked by the base's state key with a viewport: the server places a state once and composes
// only what meets the viewport (tens of ms, a few kB).
async function askRegion(r, { rect, minSize }) {
  const vp = [rect.x0, rect.y0, rect.x1 - rect.x0, rect.y1 - rect.y0].map(Math.round).join(",");
  const url = `${api.layoutUrl(state.run, state.graph)}?key=${encodeURIComponent(r.key)}&viewport=${vp}&min_size=${minSize}`;
  const t0 = performance.now();
  let got = null;
  try {
    got = await fetchLayout(url, null, null, { region: { ...rect, base: r.seq } });
  } catch (err) {
    if (!(err instanceof Cancelled)) status(`error: ${err}`);
  }
  if (!got || state.region !== r || r.seq !== state.viewSeq) return;
  r.rect = rect;
  r.min = minSize;
  await show(viewOfWorker(got, [...state.expanded]), t0, performance.now());
  document.body.dataset.detail = String(r.seq);
}

// Until the region the camera needs is drawn (a few rounds at most: the camera may move).
export async function settleRegion() {
  for (let i = 0; i < 4 && state.region && (regionWanted() || state.region.loading); i++) {
    await (state.region.loading || loadRegion());
  }
}

// A layout taking long: say so, and offer to cancel it (the button, or Escape).
function showPending(on) {
  $("cancel-layout").hidden = !on;
  if (on) status("laying out… (Escape or Cancel stops it; the view stays as it is)");
}

export function cancelLayout() {
  return cancelLayouts();
}

function restoreShown() {
  state.expanded = new Set(shown.expanded);
  state.expandAll = shown.expandAll;
  updateURL();
  status("layout cancelled: the view is as it was");
}

export async function follow(run) {
  // Live runs (tpx-inspect run --serve): new graphs appear as they are recorded.
  while (state.run === run) {
    const feed = await api.feed(run, state.graphs.length);
    for (const g of feed.new) {
      state.graphs.push(g);
      $("graph").append(new Option(graphLabel(g), g.id));
    }
    if (feed.new.length) status(`live: ${state.graphs.length} graphs recorded`);
    if (feed.status !== "running" && !feed.new.length) break;
  }
}
