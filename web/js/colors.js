// Colours: node kinds and statuses come from CSS custom properties (light and dark themes);
// per-node values map through a sequential scale with a legend.

const KINDS = ["leaf", "param", "op", "loss", "scope", "stub"];

let cache = null;

export function themeColors() {
  if (cache) return cache;
  const css = getComputedStyle(document.documentElement);
  const get = (name) => css.getPropertyValue(name).trim();
  cache = {
    background: get("--canvas-bg"),
    edge: get("--edge"),
    edgeLabel: get("--edge-label"),
    text: get("--node-text"),
    border: get("--node-border"),
    selected: get("--selected"),
    hit: get("--hit"),
    fail: get("--fail"),
    skipped: get("--skipped"),
    ok: get("--ok"),
    active: get("--active"),
    accum: get("--accum"),
  };
  for (const k of KINDS) cache["kind-" + k] = get("--kind-" + k);
  return cache;
}

export function resetThemeCache() {
  cache = null;
}

export function kindColor(kind, colors = themeColors()) {
  return colors["kind-" + kind] || colors["kind-op"];
}

// A perceptually ordered scale (dark blue -> teal -> yellow), interpolated in RGB.
const STOPS = [
  [68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37],
];

export function scaleColor(t) {
  if (!Number.isFinite(t)) return "rgb(220, 38, 38)";
  const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const c = STOPS[i].map((v, j) => Math.round(v + f * (STOPS[i + 1][j] - v)));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

// Map node values to colours; returns {fill, min, max, log}. ``scale`` is "linear", "log" or
// "auto": log when the values span more than two decades, or when one value dominates a linear
// scale (the largest over 100x the median), so that the rest do not all get the bottom colour.
export function colourBy(values, scale = "auto") {
  const finite = [...values.values()].filter((v) => Number.isFinite(v));
  if (!finite.length) return { fill: new Map(), min: 0, max: 0, log: false };
  let min = Infinity, max = -Infinity;
  for (const v of finite) {
    min = Math.min(min, v);
    max = Math.max(max, v);
  }
  const positive = finite.filter((v) => v > 0);
  const floor = positive.length ? Math.min(...positive) : 1;
  const log = positive.length > 0 && max > 0 && (scale === "log" || (scale === "auto" && dominated(finite, min, max, floor)));
  const f = (v) => (log ? Math.log10(Math.max(v, floor)) : v);
  const lo = f(log ? Math.max(min, floor) : min), hi = f(max);
  const fill = new Map();
  for (const [id, v] of values) {
    fill.set(id, Number.isFinite(v) ? scaleColor(hi > lo ? (f(v) - lo) / (hi - lo) : 0.5) : scaleColor(NaN));
  }
  return { fill, min, max, log, floor };
}

function dominated(finite, min, max, floor) {
  if (min > 0 && max / min > 100) return true;
  const sorted = finite.slice().sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return min >= 0 && max > 0 && max / Math.max(median, floor) > 100;
}

// What each colour-by value is and how its numbers read on the legend.
export const UNITS = {
  grad_norm: { unit: "L2 norm of the gradient", format: "number" },
  output_norm: { unit: "L2 norm of the output", format: "number" },
  saved_bytes: { unit: "bytes saved for backward", format: "bytes" },
  backward_time: { unit: "seconds per backward step", format: "seconds" },
  forward_time: { unit: "seconds per forward op", format: "seconds" },
  check_error: { unit: "failed checks per node", format: "number" },
  nonfinite: { unit: "1 = NaN/Inf in output or gradient", format: "number" },
  diff: { unit: "max |A - B| of output or gradient", format: "number" },
};

export function legendGradient() {
  return `linear-gradient(to right, ${STOPS.map((c) => `rgb(${c.join(",")})`).join(", ")})`;
}
