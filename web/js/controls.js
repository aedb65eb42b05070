// The header's controls and the keyboard: every action has a button or a select and a key.

import { $, main, minimap, state, views } from "./app.js";
import { resetThemeCache } from "./colors.js";
import { runChecks } from "./checks-ui.js";
import { applyColour, toggleLegend } from "./colour.js";
import { clearCompare, showCompare } from "./compare.js";
import { exportAs } from "./exporting.js";
import { cancelLayout, refreshView, selectGraph, selectRun, setCollapsed, setExpandAll } from "./load.js";
import { activate, nextHit, orderStep, search } from "./picking.js";
import { play, step } from "./playback.js";
import { updateURL } from "./url.js";

export function setTheme(theme) {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem("tpx-theme", theme);
  resetThemeCache();
  minimap.index = null; // repainted in the new colours
  main.draw();
  if (views.other) views.other.draw();
}

const KEYS = {
  "/": () => $("search").focus(),
  n: () => nextHit(1),
  N: () => nextHit(-1),
  j: () => orderStep(1),
  k: () => orderStep(-1),
  f: () => main.fit(),
  m: () => minimap.toggle(),
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
  l: () => toggleLegend(),
  Escape: () => {
    if (cancelLayout()) return; // a layout in progress is stopped first
    state.selected = null;
    main.selected = null;
    main.draw();
  },
  Enter: () => {
    const box = main.graph.nodes.find((b) => b.id === main.selected);
    if (box) activate(box);
  },
};

function onKey(ev) {
  const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
  if (typing) {
    if (ev.key === "Escape") document.activeElement.blur();
    return;
  }
  // Enter and Space on a focused button or link do what a click does, not the canvas' action.
  const pressable = ["BUTTON", "A", "SUMMARY"].includes(document.activeElement.tagName);
  if (pressable && (ev.key === "Enter" || ev.key === " ")) return;
  const fn = KEYS[ev.key];
  if (fn && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
    ev.preventDefault();
    fn();
  }
}

async function setExpanded(all) {
  if (all) setExpandAll();
  else setCollapsed();
  await refreshView();
  main.fit();
  updateURL();
}

// The overlay comparison colours by difference; otherwise the colour-by value does.
function recolour() {
  if (state.compare && $("compare-mode").value === "overlay") showCompare(state.compare);
  else applyColour();
}

export function bindControls() {
  document.addEventListener("keydown", onKey);
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
  $("cancel-layout").addEventListener("click", () => cancelLayout());
  $("expand-all").addEventListener("click", () => setExpanded(true));
  $("collapse-all").addEventListener("click", () => setExpanded(false));
  $("stub").addEventListener("change", async (e) => {
    state.stub = e.target.value;
    await refreshView();
    updateURL();
  });
  $("colour").addEventListener("change", (e) => {
    state.colour = e.target.value;
    applyColour();
  });
  $("scale").addEventListener("change", recolour);
  $("legend-hide").addEventListener("click", toggleLegend);
  $("legend-show").addEventListener("click", toggleLegend);
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
}
