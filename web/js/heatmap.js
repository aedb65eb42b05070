// Value figures for the side panel: a heatmap of a 1-D/2-D value (N-D: leading axes as rows)
// with its colour scale and the value under the pointer, and a histogram of the values.

import { legendGradient, scaleColor } from "./colors.js";

const num = (v) => (typeof v === "number" ? v : v === "nan" ? NaN : v === "inf" ? Infinity : v === "-inf" ? -Infinity : NaN);
const short = (v) => (Number.isFinite(v) ? (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(2) : String(+v.toPrecision(4))) : String(v));

// A flat value (C order) as a grid: 1-D is one row, N-D has the product of leading axes as rows.
export function gridOf(values) {
  const shape = values.shape.length ? values.shape : [1];
  const cols = shape[shape.length - 1] || 1;
  const rows = Math.max(1, shape.slice(0, -1).reduce((a, b) => a * b, 1));
  if (values.data.length < rows * cols) return null; // cut by the server's limit
  const data = [];
  for (let r = 0; r < rows; r++) data.push(values.data.slice(r * cols, (r + 1) * cols).map(num));
  return { rows, cols, data, shape: values.shape, block: [1, 1], downsampled: false };
}

// grid: {rows, cols, data (rows of numbers or "nan"/"inf"), shape, block, downsampled}
export function heatmap(grid, maxCells = 128) {
  const data = grid.data.map((row) => row.map(num));
  const rows = Math.min(data.length, maxCells), cols = Math.min(data[0]?.length || 0, maxCells);
  let lo = Infinity, hi = -Infinity;
  for (const row of data) for (const v of row) if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (lo > hi) { lo = 0; hi = 1; }
  const canvas = document.createElement("canvas");
  canvas.className = "heatmap";
  canvas.width = cols;
  canvas.height = rows;
  const cell = Math.max(1, Math.min(16, Math.floor(320 / Math.max(cols, 1))));
  canvas.style.width = `${cols * cell}px`;
  canvas.style.height = `${rows * Math.max(cell, rows === 1 ? 12 : cell)}px`;
  const ctx = canvas.getContext("2d");
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = data[r][c];
      ctx.fillStyle = scaleColor(Number.isFinite(v) ? (hi > lo ? (v - lo) / (hi - lo) : 0.5) : NaN);
      ctx.fillRect(c, r, 1, 1);
    }
  }
  const shape = grid.shape.join("×");
  const note = grid.downsampled ? ` · ${grid.block.join("×")} blocks averaged` : "";
  canvas.title = `${shape} heatmap${note}`;
  const readout = el("div", "heatmap-readout mono", `${shape}${note} · point at a cell for its value`);
  canvas.addEventListener("mousemove", (ev) => {
    const rect = canvas.getBoundingClientRect();
    const c = Math.min(cols - 1, Math.floor(((ev.clientX - rect.left) / rect.width) * cols));
    const r = Math.min(rows - 1, Math.floor(((ev.clientY - rect.top) / rect.height) * rows));
    const [br, bc] = grid.block;
    const where = br * bc > 1 ? `[${r * br}:${(r + 1) * br}, ${c * bc}:${(c + 1) * bc}] mean` : rows === 1 ? `[${c}]` : `[${r}, ${c}]`;
    readout.textContent = `${where} = ${short(data[r][c])}`;
    canvas.dataset.hover = String(data[r][c]);
  });
  const bar = el("span", "bar");
  bar.style.background = legendGradient();
  const scale = el("div", "legend heatmap-scale", short(lo));
  scale.append(bar, short(hi));
  const figure = el("figure", "value-figure");
  figure.append(canvas, scale, readout);
  return figure;
}

// A histogram: {edges (bins + 1), counts, nan, inf} as an SVG of bars with the range below.
export function histogram(h, title) {
  const w = 300, ht = 60, n = h.counts.length, top = Math.max(1, ...h.counts);
  const bars = h.counts.map((c, i) => {
    const bh = (c / top) * ht;
    return `<rect x="${((i / n) * w).toFixed(1)}" y="${(ht - bh).toFixed(1)}" width="${Math.max(1, w / n - 1).toFixed(1)}" height="${bh.toFixed(1)}"><title>[${short(h.edges[i])}, ${short(h.edges[i + 1])}): ${c}</title></rect>`;
  });
  const figure = el("figure", "value-figure histogram");
  figure.innerHTML = `<svg width="${w}" height="${ht}" viewBox="0 0 ${w} ${ht}" role="img" aria-label="${title}">${bars.join("")}</svg>`;
  const bad = h.nan || h.inf ? ` · ${h.nan} NaN, ${h.inf} Inf` : "";
  figure.append(el("figcaption", "muted", `${title}: ${short(h.edges[0])} … ${short(h.edges[n])} · ${h.counts.reduce((a, b) => a + b, 0)} values${bad}`));
  return figure;
}

// Histogram counts from values at hand (the server's are used when it has them).
export function histogramOf(data, bins = 30) {
  const xs = data.map(num);
  const finite = xs.filter(Number.isFinite);
  const lo = finite.length ? Math.min(...finite) : 0, hi0 = finite.length ? Math.max(...finite) : 1;
  const hi = hi0 > lo ? hi0 : lo + 1;
  const counts = new Array(bins).fill(0);
  for (const v of finite) counts[Math.min(bins - 1, Math.floor(((v - lo) / (hi - lo)) * bins))] += 1;
  const edges = counts.map((_, i) => lo + ((hi - lo) * i) / bins).concat([hi]);
  return { edges, counts, nan: xs.filter(Number.isNaN).length, inf: xs.filter((v) => Math.abs(v) === Infinity).length };
}

function el(tag, cls, text = "") {
  const e = document.createElement(tag);
  e.className = cls;
  if (text) e.textContent = text;
  return e;
}
