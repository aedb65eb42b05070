// Canvas 2D rendering of a laid-out DAG: camera (pan, zoom, fit), culling to the viewport,
// label level-of-detail, a spatial grid for hit testing, highlights and colour overrides.

import { kindColor, themeColors } from "./colors.js";

const GRID = 256; // world units per hit-test cell

export class GraphView {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.graph = { nodes: [], edges: [], width: 0, height: 0 };
    this.cam = { x: 0, y: 0, k: 1 };
    this.selected = null;
    this.hits = new Set();
    this.marked = new Map(); // node id -> "fail" | "skipped" | "ok" | "active" | "accum"
    this.fill = null; // node id -> css colour (colour-by mode)
    this.byId = new Map();
    this.grid = new Map();
    this.listeners = {};
    this.frame = 0;
    this._bindPointer();
    new ResizeObserver(() => this.resize()).observe(canvas.parentElement);
    this.resize();
  }

  on(event, fn) {
    (this.listeners[event] ||= []).push(fn);
  }

  emit(event, arg) {
    for (const fn of this.listeners[event] || []) fn(arg);
  }

  setGraph(graph) {
    this.graph = graph;
    this.byId = new Map(graph.nodes.map((n) => [n.id, n]));
    this.grid = new Map();
    for (const n of graph.nodes) {
      const x0 = Math.floor((n.x - n.w / 2) / GRID), x1 = Math.floor((n.x + n.w / 2) / GRID);
      const y0 = Math.floor((n.y - n.h / 2) / GRID), y1 = Math.floor((n.y + n.h / 2) / GRID);
      for (let gx = x0; gx <= x1; gx++) {
        for (let gy = y0; gy <= y1; gy++) {
          const key = gx + "," + gy;
          if (!this.grid.has(key)) this.grid.set(key, []);
          this.grid.get(key).push(n);
        }
      }
    }
    this.draw();
  }

  resize() {
    const rect = this.canvas.parentElement.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.floor(rect.width * dpr));
    this.canvas.height = Math.max(1, Math.floor(rect.height * dpr));
    this.canvas.style.width = rect.width + "px";
    this.canvas.style.height = rect.height + "px";
    this.dpr = dpr;
    this.draw();
  }

  get viewWidth() {
    return this.canvas.width / this.dpr;
  }

  get viewHeight() {
    return this.canvas.height / this.dpr;
  }

  fit() {
    const { width, height } = this.graph;
    if (!width || !height) return;
    const k = Math.min(this.viewWidth / (width + 40), this.viewHeight / (height + 40), 2);
    this.cam = { k, x: width / 2 - this.viewWidth / (2 * k), y: height / 2 - this.viewHeight / (2 * k) };
    this.draw();
  }

  zoomBy(factor, sx = this.viewWidth / 2, sy = this.viewHeight / 2) {
    const { x, y, k } = this.cam;
    const wx = x + sx / k, wy = y + sy / k;
    const nk = Math.min(8, Math.max(0.01, k * factor));
    this.cam = { k: nk, x: wx - sx / nk, y: wy - sy / nk };
    this.draw();
  }

  panBy(dx, dy) {
    this.cam.x -= dx / this.cam.k;
    this.cam.y -= dy / this.cam.k;
    this.draw();
  }

  centerOn(id, zoom = null) {
    const n = this.byId.get(id);
    if (!n) return;
    const k = zoom ?? Math.max(this.cam.k, 0.8);
    this.cam = { k, x: n.x - this.viewWidth / (2 * k), y: n.y - this.viewHeight / (2 * k) };
    this.draw();
  }

  toWorld(sx, sy) {
    return [this.cam.x + sx / this.cam.k, this.cam.y + sy / this.cam.k];
  }

  nodeAt(sx, sy) {
    const [wx, wy] = this.toWorld(sx, sy);
    const cell = this.grid.get(Math.floor(wx / GRID) + "," + Math.floor(wy / GRID)) || [];
    for (const n of cell) {
      if (Math.abs(wx - n.x) <= n.w / 2 && Math.abs(wy - n.y) <= n.h / 2) return n;
    }
    return null;
  }

  draw() {
    if (this._pending) return;
    this._pending = true;
    requestAnimationFrame(() => {
      this._pending = false;
      this.render();
    });
  }

  render() {
    const t0 = performance.now();
    const { ctx, cam } = this;
    const colors = themeColors();
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = colors.background;
    ctx.fillRect(0, 0, this.viewWidth, this.viewHeight);
    ctx.setTransform(this.dpr * cam.k, 0, 0, this.dpr * cam.k, -cam.x * cam.k * this.dpr, -cam.y * cam.k * this.dpr);
    const view = { x0: cam.x, y0: cam.y, x1: cam.x + this.viewWidth / cam.k, y1: cam.y + this.viewHeight / cam.k };
    this.drawnNodes = 0;
    this._drawEdges(view, colors);
    this._drawNodes(view, colors);
    this.frame += 1;
    this.lastRenderMs = performance.now() - t0;
    this.canvas.dataset.frame = String(this.frame);
    this.canvas.dataset.drawn = String(this.drawnNodes);
    this.emit("render", this.lastRenderMs);
  }

  _drawEdges(view, colors) {
    const { ctx, cam } = this;
    ctx.lineWidth = 1 / cam.k;
    ctx.strokeStyle = colors.edge;
    const labels = cam.k > 0.7;
    ctx.font = `${10}px sans-serif`;
    for (const e of this.graph.edges) {
      const pts = e.points;
      if (!pts || pts.length < 2 || !intersects(e.bbox ||= bbox(pts), view)) continue;
      const hot = this.marked.get(e.source) === "active" || this.marked.get(e.target) === "accum";
      ctx.strokeStyle = hot ? colors.active : colors.edge;
      ctx.lineWidth = (hot ? 3 : 1) / Math.min(cam.k, 1);
      ctx.beginPath();
      ctx.moveTo(pts[0][0], pts[0][1]);
      for (let i = 1; i < pts.length; i++) ctx.lineTo(pts[i][0], pts[i][1]);
      ctx.stroke();
      arrowHead(ctx, pts[pts.length - 2], pts[pts.length - 1], 6);
      if (labels && e.label) {
        const m = pts[Math.floor(pts.length / 2)];
        ctx.fillStyle = colors.edgeLabel;
        ctx.fillText(e.label, m[0] + 4, m[1]);
      }
    }
  }

  _drawNodes(view, colors) {
    const { ctx, cam } = this;
    const showLabel = cam.k > 0.35, showSub = cam.k > 0.6;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (const n of this.graph.nodes) {
      if (n.x + n.w / 2 < view.x0 || n.x - n.w / 2 > view.x1) continue;
      if (n.y + n.h / 2 < view.y0 || n.y - n.h / 2 > view.y1) continue;
      this.drawnNodes += 1;
      const x = n.x - n.w / 2, y = n.y - n.h / 2;
      const custom = this.fill && this.fill.get(n.id);
      ctx.fillStyle = custom || kindColor(n.kind, colors);
      ctx.beginPath();
      roundRect(ctx, x, y, n.w, n.h, n.kind === "scope" ? 10 : 4);
      ctx.fill();
      const mark = this.marked.get(n.id);
      const chosen = n.id === this.selected || this.hits.has(n.id);
      ctx.lineWidth = (chosen ? 3 : 1) / Math.min(cam.k, 1);
      ctx.strokeStyle = n.id === this.selected ? colors.selected : this.hits.has(n.id) ? colors.hit : colors.border;
      ctx.stroke();
      if (mark) {
        // A status ring outside the border, so a selected failing node shows both.
        const pad = 5 / Math.min(cam.k, 1);
        ctx.beginPath();
        roundRect(ctx, x - pad, y - pad, n.w + 2 * pad, n.h + 2 * pad, 7);
        ctx.lineWidth = 3 / Math.min(cam.k, 1);
        ctx.strokeStyle = colors[mark];
        // Skipped nodes get a dashed ring: not checked is not the same as passed.
        if (mark === "skipped") ctx.setLineDash([6 / Math.min(cam.k, 1), 4 / Math.min(cam.k, 1)]);
        ctx.stroke();
        ctx.setLineDash([]);
      }
      if (!showLabel) continue;
      ctx.fillStyle = custom ? textOn(custom) : colors.text;
      ctx.font = `bold ${12}px sans-serif`;
      ctx.fillText(clip(n.label, n.w), n.x, showSub && n.sublabel ? n.y - 7 : n.y);
      if (showSub && n.sublabel) {
        ctx.font = `${10}px sans-serif`;
        ctx.fillText(clip(n.sublabel, n.w), n.x, n.y + 8);
      }
    }
  }

  _bindPointer() {
    const c = this.canvas;
    let drag = null;
    c.addEventListener("pointerdown", (ev) => {
      drag = { x: ev.offsetX, y: ev.offsetY, moved: false };
      c.setPointerCapture(ev.pointerId);
    });
    c.addEventListener("pointermove", (ev) => {
      if (!drag) return;
      const dx = ev.offsetX - drag.x, dy = ev.offsetY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 2) drag.moved = true;
      drag.x = ev.offsetX;
      drag.y = ev.offsetY;
      if (drag.moved) this.panBy(dx, dy);
    });
    c.addEventListener("pointerup", (ev) => {
      if (drag && !drag.moved) {
        const n = this.nodeAt(ev.offsetX, ev.offsetY);
        this.emit("click", n);
      }
      drag = null;
    });
    c.addEventListener("dblclick", (ev) => {
      const n = this.nodeAt(ev.offsetX, ev.offsetY);
      if (n) this.emit("activate", n);
    });
    c.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      this.zoomBy(Math.exp(-ev.deltaY * 0.0015), ev.offsetX, ev.offsetY);
    }, { passive: false });
  }
}

function bbox(pts) {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const [x, y] of pts) {
    x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
  }
  return { x0, y0, x1, y1 };
}

function intersects(b, v) {
  return !(b.x1 < v.x0 || b.x0 > v.x1 || b.y1 < v.y0 || b.y0 > v.y1);
}

function roundRect(ctx, x, y, w, h, r) {
  ctx.moveTo(x + r, y);
  ctx.arcTo(x + w, y, x + w, y + h, r);
  ctx.arcTo(x + w, y + h, x, y + h, r);
  ctx.arcTo(x, y + h, x, y, r);
  ctx.arcTo(x, y, x + w, y, r);
  ctx.closePath();
}

function arrowHead(ctx, [x0, y0], [x1, y1], size) {
  const a = Math.atan2(y1 - y0, x1 - x0);
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - size * Math.cos(a - 0.4), y1 - size * Math.sin(a - 0.4));
  ctx.lineTo(x1 - size * Math.cos(a + 0.4), y1 - size * Math.sin(a + 0.4));
  ctx.closePath();
  ctx.fillStyle = ctx.strokeStyle;
  ctx.fill();
}

function textOn(rgb) {
  // Black or white text, whichever reads better on a scale colour "rgb(r, g, b)".
  const [r, g, b] = (rgb.match(/\d+/g) || [0, 0, 0]).map(Number);
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? "#111" : "#fff";
}

function clip(text, width) {
  const max = Math.max(3, Math.floor(width / 7));
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}
