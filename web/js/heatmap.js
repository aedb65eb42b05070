// A 2-D value preview drawn as a heatmap (diverging around zero, NaN/Inf in red).

import { scaleColor } from "./colors.js";

export function heatmap(values, maxCells = 64) {
  const rows = values.length, cols = rows ? values[0].length : 0;
  const canvas = document.createElement("canvas");
  canvas.className = "heatmap";
  canvas.width = Math.min(cols, maxCells);
  canvas.height = Math.min(rows, maxCells);
  canvas.style.width = `${Math.min(320, canvas.width * 8)}px`;
  canvas.title = `${rows}×${cols} heatmap`;
  const ctx = canvas.getContext("2d");
  const flat = values.flat().filter((v) => Number.isFinite(v));
  const lo = flat.length ? Math.min(...flat) : 0, hi = flat.length ? Math.max(...flat) : 1;
  for (let r = 0; r < canvas.height; r++) {
    for (let c = 0; c < canvas.width; c++) {
      const v = values[r][c];
      ctx.fillStyle = scaleColor(Number.isFinite(v) ? (hi > lo ? (v - lo) / (hi - lo) : 0.5) : NaN);
      ctx.fillRect(c, r, 1, 1);
    }
  }
  return canvas;
}
