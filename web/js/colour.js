// Colour by a per-node value: each box shows the largest value of the nodes it holds, through
// the sequential scale (linear, log, or auto: log when one node would dominate), with a legend
// in the footer that names the unit and can be hidden (L).

import { $, api, main, state } from "./app.js";
import { boxOf } from "./boxes.js";
import { UNITS, colourBy, legendGradient } from "./colors.js";
import { bytes, fmt, seconds } from "./panel.js";

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

async function colourFromServer(key) {
  const seq = (state.colourSeq = (state.colourSeq || 0) + 1);
  const res = await api.colours(state.run, state.graph, SERVER_METRIC[key], state.view.key);
  if (seq !== state.colourSeq || state.colour !== key) return; // asked again meanwhile
  const values = new Map(Object.entries(res.boxes).map(([id, v]) => [id, Number(v)]));
  const mode = $("scale").value === "auto" && res.log_suggested ? "log" : $("scale").value;
  const scale = colourBy(values, mode);
  main.fill = scale.fill;
  showLegend({ ...scale, key, title: $("colour").selectedOptions[0].text, unit: res.unit });
  main.draw();
}

export function formatValue(v, key) {
  const how = UNITS[key]?.format;
  if (how === "bytes" && Number.isFinite(v)) return bytes(Math.round(v));
  if (how === "seconds") return seconds(v);
  return fmt(v);
}

// Colour-by keys the server's view model computes per box (group value: max over members).
const SERVER_METRIC = { grad_norm: "grad_norm", saved_bytes: "saved_bytes", backward_time: "backward_seconds", nonfinite: "nonfinite" };

export async function applyColour() {
  const key = state.colour;
  if (key === "kind") {
    main.fill = null;
    showLegend(null);
    main.draw();
    return;
  }
  if (state.vm && SERVER_METRIC[key]) return colourFromServer(key);
  // Without every record here (a big graph), failed checks colour the boxes holding them.
  const fromFindings = key === "check_error" && !state.nodesLoaded;
  const values = new Map();
  for (const [id, found] of fromFindings ? state.findings : []) {
    const box = boxOf(id);
    if (box) values.set(box.id, Math.max(values.get(box.id) || 0, found.length));
  }
  for (const n of fromFindings ? [] : state.nodes) {
    const box = boxOf(n.id);
    if (!box) continue;
    const v = nodeValue(n, key);
    const prev = values.get(box.id);
    values.set(box.id, prev === undefined || !(prev >= v) ? v : prev); // scopes show their max
  }
  const scale = colourBy(values, $("scale").value);
  main.fill = scale.fill;
  showLegend({ ...scale, key, title: $("colour").selectedOptions[0].text });
  main.draw();
}

// The legend of a scale (null: none to show); the person's choice to hide it is kept.
export function showLegend(scale) {
  state.legend = scale;
  const hidden = !scale || state.legendHidden;
  $("legend").hidden = hidden;
  $("legend-show").hidden = !scale || !state.legendHidden;
  if (!scale) return;
  const low = scale.log ? Math.max(scale.min, scale.floor) : scale.min;
  $("legend-bar").style.background = legendGradient();
  $("legend-min").textContent = formatValue(low, scale.key);
  $("legend-max").textContent = formatValue(scale.max, scale.key);
  const unit = scale.unit || UNITS[scale.key]?.unit;
  $("legend-label").textContent = `${scale.title}${unit ? ` (${unit})` : ""}${scale.log ? " · log scale" : " · linear scale"}`;
}

export function toggleLegend() {
  state.legendHidden = !state.legendHidden;
  showLegend(state.legend || null);
}
