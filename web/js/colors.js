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

// Map node values to colours (log scale for wide ranges); returns {fill, min, max, log}.
export function colourBy(values) {
  const finite = [...values.values()].filter((v) => Number.isFinite(v));
  if (!finite.length) return { fill: new Map(), min: 0, max: 0, log: false };
  let min = Math.min(...finite), max = Math.max(...finite);
  const log = min > 0 && max / min > 100;
  const f = (v) => (log ? Math.log10(v) : v);
  const lo = f(min), hi = f(max);
  const fill = new Map();
  for (const [id, v] of values) {
    fill.set(id, Number.isFinite(v) ? scaleColor(hi > lo ? (f(v) - lo) / (hi - lo) : 0.5) : scaleColor(NaN));
  }
  return { fill, min, max, log };
}

export function legendGradient() {
  return `linear-gradient(to right, ${STOPS.map((c) => `rgb(${c.join(",")})`).join(", ")})`;
}
