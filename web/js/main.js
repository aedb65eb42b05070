// The viewer application's entry: wires the controls, opens what the deep link names (or the
// first run), follows live runs, and answers later changes of the link.
// Its parts: app.js (shared state), load.js, boxes.js, picking.js, colour.js, playback.js,
// checks-ui.js, compare.js, exporting.js, controls.js, url.js.

import { $, api, main, state, status } from "./app.js";
import { boxOf } from "./boxes.js";
import { runChecks } from "./checks-ui.js";
import { openCompare } from "./compare.js";
import { bindControls, setTheme } from "./controls.js";
import { fillCompare, fillGraphs, follow, loadRuns, refreshView, selectGraph, selectRun, watchRegion } from "./load.js";
import { select, toggle, activate, clickBox } from "./picking.js";
import { expandAll, expandOne, fitView, panFrames, zoomTo } from "./measure.js";
import { requests, startWorker } from "./layouts.js";
import { initPlan } from "./plan.js";
import { step } from "./playback.js";
import { readURL } from "./url.js";

main.on("click", clickBox);
main.on("activate", activate);
main.on("render", watchRegion); // a big Expand all: the region the camera looks at, when it rests
bindControls();

window.addEventListener("error", (e) => status(`error: ${e.message}`));
window.addEventListener("unhandledrejection", (e) => status(`error: ${e.reason}`));

function applyLink(link) {
  state.expanded = new Set(link.expand);
  state.expandAll = link.expandAll;
  state.stub = link.stub;
  $("stub").value = link.stub;
}

async function start() {
  const stored = localStorage.getItem("tpx-theme");
  setTheme(stored || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
  const link = readURL();
  applyLink(link);
  // A link naming a graph opens it first: the run list (which makes the server read every
  // trace it serves) and the compare list are asked for after the first frame.
  if (link.run && link.graph !== null && (await openLinked(link))) return;
  const runs = await loadRuns();
  if (!runs.length) {
    status("no runs: start the server on a run folder (tpx-inspect serve tpx-runs/...)");
    return;
  }
  const run = runs.some((r) => r.id === link.run) ? link.run : runs[0].id;
  if (link.graph !== null) {
    state.run = run;
    $("run").value = run;
    fillGraphs((await api.graphs(run)).graphs);
    await selectGraph(link.graph, { keepExpanded: true, node: link.node });
  } else {
    await selectRun(run);
  }
  await afterFirstFrame(runs, link, run);
}

// The linked graph without waiting for the run list; false when the link names nothing here.
async function openLinked(link) {
  state.run = link.run;
  $("run").replaceChildren(new Option(link.run, link.run));
  try {
    await selectGraph(link.graph, { keepExpanded: true, node: link.node });
  } catch {
    state.run = null;
    return false;
  }
  const runs = await loadRuns();
  $("run").value = state.run;
  await afterFirstFrame(runs, link, state.run);
  return true;
}

// What the first frame does not need: the compare list (one request per run), a live feed.
async function afterFirstFrame(runs, link, run) {
  if (link.compare) {
    await fillCompare(runs).catch((err) => status(`error: ${err}`));
    await openCompare(link.compare, link.node);
  } else deferCompare(runs);
  const live = runs.find((r) => r.id === run)?.live;
  if (live) follow(run);
}

// The compare list is filled when a person reaches for it, or once the page is idle.
function deferCompare(runs) {
  let filled = null;
  const fill = () => (filled ||= fillCompare(runs).catch((err) => status(`error: ${err}`)));
  for (const ev of ["focus", "pointerdown", "keydown"]) $("compare").addEventListener(ev, fill, { once: true });
  setTimeout(fill, 4000);
}

// A pasted deep link (or the back button) changes the hash: show what it names.
window.addEventListener("hashchange", async () => {
  const link = readURL();
  if (!link.run) return;
  applyLink(link);
  // node= is honoured whatever else the link changes (run, graph or only the node).
  if (link.run !== state.run) await selectRun(link.run, link.graph, link.node);
  else if (link.graph !== null && link.graph !== state.graph) await selectGraph(link.graph, { keepExpanded: true, node: link.node });
  else {
    await refreshView();
    if (link.node !== null && link.node !== state.selected) await select(link.node);
  }
});

window.tpxViewer = { state, main, select, toggle, runChecks, step, boxOf, measure: { expandOne, expandAll, panFrames, zoomTo, fitView, workerRequests: () => requests } };
initPlan(); // the tpx.compile plan beside the graph (web/js/plan.js)
startWorker(); // layouts decoded off this thread once it is up

start().catch((err) => status(`error: ${err}`));
