// The minimap: the whole graph in a corner of the view (the spatial index's aggregates, drawn
// once per layout into a cached image) with the camera's rectangle on top; a click or a drag
// on it moves the camera there. Shown while the view does not hold the whole graph (M toggles).

import { kindColor, themeColors } from "./colors.js";

const WIDTH = 150, HEIGHT = 200, PAD = 4; // css px
const STRETCH = 1000;

export class Minimap {
  constructor(view, canvas) {
    this.view = view;
    this.canvas = canvas;
    this.cache = document.createElement("canvas");
    this.index = null;
    this.hidden = false; // by the person (M), not by the fit
    view.on("render", () => this.draw());
    this._bindPointer();
  }

  toggle() {
    this.hidden = !this.hidden;
    this.draw();
  }

  // World -> minimap, centred: one scale for both axes, except that a graph far taller than
  // wide (a long expanded chain) is widened to the minimap (up to STRETCH times), so that it
  // is not a hairline.
  _fit() {
    const { width, height } = this.view.graph;
    const ky = Math.min((WIDTH - 2 * PAD) / Math.max(width, 1), (HEIGHT - 2 * PAD) / Math.max(height, 1));
    const kx = Math.min((WIDTH - 2 * PAD) / Math.max(width, 1), STRETCH * ky);
    return { k: ky, kx, ky, ox: (WIDTH - width * kx) / 2, oy: (HEIGHT - height * ky) / 2 };
  }

  _paintCache() {
    const dpr = window.devicePixelRatio || 1;
    this.cache.width = this.canvas.width = WIDTH * dpr;
    this.cache.height = this.canvas.height = HEIGHT * dpr;
    this.canvas.style.width = WIDTH + "px";
    this.canvas.style.height = HEIGHT + "px";
    const ctx = this.cache.getContext("2d"), colors = themeColors(), f = this._fit();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = colors.background;
    ctx.fillRect(0, 0, WIDTH, HEIGHT);
    const all = { x0: -Infinity, y0: -Infinity, x1: Infinity, y1: Infinity };
    const blocks = this.view.index.aggregatesIn(all, f.k, 2);
    for (const a of blocks) {
      ctx.fillStyle = kindColor(a.kind, colors);
      ctx.fillRect(f.ox + a.x0 * f.kx, f.oy + a.y0 * f.ky, Math.max((a.x1 - a.x0) * f.kx, 2), Math.max((a.y1 - a.y0) * f.ky, 2));
    }
    this.canvas.dataset.blocks = String(blocks.length);
    this.index = this.view.index;
  }

  draw() {
    const v = this.view;
    const whole = v.cam.x <= 0 && v.cam.y <= 0 && v.cam.x + v.viewWidth / v.cam.k >= v.graph.width && v.cam.y + v.viewHeight / v.cam.k >= v.graph.height;
    this.canvas.hidden = this.hidden || !v.index || whole;
    if (this.canvas.hidden) return;
    if (this.index !== v.index) this._paintCache();
    const ctx = this.canvas.getContext("2d"), dpr = window.devicePixelRatio || 1, f = this._fit();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.cache, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const x = f.ox + v.cam.x * f.kx, y = f.oy + v.cam.y * f.ky;
    const w = Math.max((v.viewWidth / v.cam.k) * f.kx, 4), h = Math.max((v.viewHeight / v.cam.k) * f.ky, 4);
    ctx.lineWidth = 1.5;
    ctx.strokeStyle = themeColors().selected;
    ctx.strokeRect(x, y, w, h);
    this.canvas.dataset.view = [x, y, w, h].map((n) => n.toFixed(1)).join(",");
  }

  // Centre the camera on the world point under a minimap point.
  _moveTo(mx, my) {
    const v = this.view, f = this._fit();
    const wx = (mx - f.ox) / f.kx, wy = (my - f.oy) / f.ky;
    v.cam = { k: v.cam.k, x: wx - v.viewWidth / (2 * v.cam.k), y: wy - v.viewHeight / (2 * v.cam.k) };
    v.draw();
  }

  _bindPointer() {
    let dragging = false;
    this.canvas.addEventListener("pointerdown", (ev) => {
      dragging = true;
      this.canvas.setPointerCapture(ev.pointerId);
      this._moveTo(ev.offsetX, ev.offsetY);
      ev.stopPropagation();
    });
    this.canvas.addEventListener("pointermove", (ev) => dragging && this._moveTo(ev.offsetX, ev.offsetY));
    this.canvas.addEventListener("pointerup", () => (dragging = false));
  }
}
