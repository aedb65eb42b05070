// Colour by a per-node value: each box shows the largest value of the nodes it holds, through
// the sequential scale, with a legend in the footer.

import { $, main, state } from "./app.js";
import { boxOf } from "./boxes.js";
import { colourBy, legendGradient } from "./colors.js";
import { fmt } from "./panel.js";

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

export function applyColour() {
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
