// Canvas 2D rendering of a laid-out DAG: camera (pan, zoom, fit), drawing from a spatial index
// (only what meets the viewport), level of detail (labels when legible; boxes too small to see
// drawn as aggregates per cell), frames around expanded scopes, highlights and colour overrides.

import { kindColor, themeColors } from "./colors.js";
import { fitLabel } from "./labels.js";
import { labelRoom, medianHeight, SpatialIndex } from "./spatial.js";

const TINY = 4; // screen px: boxes lower than this are drawn as aggregates
const MANY = 5000; // more boxes than this in view: no labels, fills batched per colour
const LEGIBLE = 7; // screen px: the smallest label drawn
const OVERRUN = 1.4; // an enlarged label may be this many box widths wide

export class GraphView {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.graph = { nodes: [], edges: [], frames: [], width: 0, height: 0 };
    this.cam = { x: 0, y: 0, k: 1 };
    this.selected = null;
    this.hits = new Set();
    this.marked = new Map(); // node id -> "fail" | "skipped" | "ok" | "active" | "accum"
    this.fill = null; // node id -> css colour (colour-by mode)
    this.byId = new Map();
    this.index = null;
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

  // ``packed``: the spatial index's buckets when the layout worker made them already.
  setGraph(graph, packed = null) {
    this.graph = graph;
    this.graph.frames ||= [];
    // byId and boxHeight come ready from the layout worker's hand-over on big graphs
    this.byId = graph.byId || new Map(graph.nodes.map((n) => [n.id, n]));
    this.index = new SpatialIndex(graph.nodes, graph.edges, graph.points, packed);
    this.boxHeight = graph.boxHeight ?? medianHeight(graph.nodes);
    this.room = new Map(); // box -> the width its label may take (labelRoom), when first asked
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

  // The zoom at which the whole graph fits the view (zooming out stops there, or at 0.01).
  fitZoom() {
    const { width, height } = this.graph;
    return Math.min(this.viewWidth / (width + 40), this.viewHeight / (height + 40), 2);
  }

  fit() {
    const { width, height } = this.graph;
    if (!width || !height) return;
    const k = this.fitZoom();
    this.cam = { k, x: width / 2 - this.viewWidth / (2 * k), y: height / 2 - this.viewHeight / (2 * k) };
    this.draw();
  }

  zoomBy(factor, sx = this.viewWidth / 2, sy = this.viewHeight / 2) {
    const { x, y, k } = this.cam;
    const wx = x + sx / k, wy = y + sy / k;
    const nk = Math.min(8, Math.max(Math.min(0.01, this.fitZoom()), k * factor));
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
    if (!this.index) return null;
    const [wx, wy] = this.toWorld(sx, sy);
    for (const n of this.index.boxesAt(wx, wy)) {
      if (Math.abs(wx - n.x) <= n.w / 2 && Math.abs(wy - n.y) <= n.h / 2) return n;
    }
    return null;
  }

  draw() {
    if (this._pending) return;
    this._pending = true;
    requestAnimationFrame(() => {
      this._pending = false;
      try {
        this.render();
      } catch (err) {
        this.lastError = String(err); // kept for the status line and the benchmark
        throw err;
      }
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
    this.labelled = 0;
    this.labels = this.keepLabels ? [] : null; // [label, drawn text, readable] (tests, bench)
    this.aggregated = 0;
    if (!this.index) return;
    this._drawFrames(view, colors);
    if (this.boxHeight * cam.k < TINY) this._drawAggregates(view, colors);
    else {
      const boxes = this.index.boxesIn(view);
      this._drawEdges(this.index.edgesIn(view), colors, boxes.length <= MANY);
      this._drawNodes(boxes, colors);
    }
    this._drawChosen(colors);
    this.frame += 1;
    this.lastRenderMs = performance.now() - t0;
    const d = this.canvas.dataset;
    d.frame = String(this.frame);
    d.drawn = String(this.drawnNodes);
    d.labelled = String(this.labelled);
    d.aggregated = String(this.aggregated);
    this.emit("render", this.lastRenderMs);
  }

  // Expanded scopes as frames: an outline with the scope's name at its top left, legible at
  // Fit too (enlarged like box labels; ``titled`` keeps the frames whose whole name is drawn:
  // only inside those may a box leave out the part of its name the frame gives).
  // Frames smaller than a few pixels are left out; outlines go in one path, one stroke.
  _drawFrames(view, colors) {
    const { ctx, cam } = this;
    const min = 6 / cam.k, labels = [];
    const size = Math.max(11, LEGIBLE / cam.k);
    this.titled = new Set();
    ctx.lineWidth = 1.5 / cam.k;
    ctx.strokeStyle = colors["kind-scope"];
    ctx.font = `bold ${size.toFixed(1)}px sans-serif`;
    ctx.beginPath();
    for (const f of this.graph.frames) {
      if (f.w < min || f.h < min) continue;
      const x0 = f.x - f.w / 2, y0 = f.y - f.h / 2;
      if (x0 + f.w < view.x0 || x0 > view.x1 || y0 + f.h < view.y0 || y0 > view.y1) continue;
      ctx.rect(x0, y0, f.w, f.h);
      if (f.w * cam.k < 30) continue;
      const [lines, readable] = fitLabel(f.label, f.w - 8, (t) => ctx.measureText(t).width);
      if (readable) this.titled.add(f.id);
      labels.push([lines[0], x0 + 4, y0 + 2]);
    }
    ctx.stroke();
    ctx.textAlign = "left";
    ctx.textBaseline = "top";
    ctx.fillStyle = colors.edgeLabel;
    for (const [text, x, y] of labels) ctx.fillText(text, x, y);
  }

  // Too small to see one by one: each occupied cell of the pyramid as one block of its most
  // common kind (or the colour-by colour of a box in it), batched into one path per colour.
  _drawAggregates(view, colors) {
    const { ctx } = this;
    const byColour = new Map();
    for (const a of this.index.aggregatesIn(view, this.cam.k, 3)) {
      const colour = (this.fill && this.fill.get(a.rep.id)) || kindColor(a.kind, colors);
      if (!byColour.has(colour)) byColour.set(colour, []);
      byColour.get(colour).push(a);
      this.aggregated += a.count;
    }
    const min = 2 / this.cam.k; // at least two pixels, so a lone box still shows
    for (const [colour, list] of byColour) {
      ctx.fillStyle = colour;
      ctx.beginPath();
      for (const a of list) ctx.rect(a.x0, a.y0, Math.max(a.x1 - a.x0, min), Math.max(a.y1 - a.y0, min));
      ctx.fill();
    }
  }

  _drawEdges(edges, colors, detailed) {
    const { ctx, cam } = this;
    const labels = detailed && cam.k > 0.7;
    const plain = [], hot = [];
    for (const e of edges) (this.marked.get(e.source) === "active" || this.marked.get(e.target) === "accum" ? hot : plain).push(e);
    ctx.font = "10px sans-serif";
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    for (const [list, colour, width] of [[plain, colors.edge, 1], [hot, colors.active, 3]]) {
      if (!list.length) continue;
      ctx.strokeStyle = ctx.fillStyle = colour;
      ctx.lineWidth = width / Math.min(cam.k, 1);
      ctx.beginPath();
      const pts = this.graph.points; // flat x0, y0, x1, y1, ...: an edge is the run [p, q)
      for (const e of list) {
        ctx.moveTo(pts[e.p], pts[e.p + 1]);
        for (let i = e.p + 2; i < e.q; i += 2) ctx.lineTo(pts[i], pts[i + 1]);
      }
      ctx.stroke();
      if (detailed) {
        ctx.beginPath();
        for (const e of list) arrowHead(ctx, pts, e.q, 6);
        ctx.fill();
      }
      if (!labels) continue;
      ctx.fillStyle = colors.edgeLabel;
      for (const e of list) {
        if (!e.label) continue;
        const m = e.p + 2 * Math.floor((e.q - e.p) / 4);
        ctx.fillText(e.label, pts[m] + 4, pts[m + 1]);
      }
    }
  }

  _drawNodes(boxes, colors) {
    const { ctx, cam } = this;
    const many = boxes.length > MANY;
    this.drawnNodes = boxes.length;
    if (many) return this._fillBatched(boxes, colors);
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (const n of boxes) {
      const x = n.x - n.w / 2, y = n.y - n.h / 2;
      const custom = this.fill && this.fill.get(n.id);
      ctx.fillStyle = custom || kindColor(n.kind, colors);
      ctx.beginPath();
      roundRect(ctx, x, y, n.w, n.h, n.group ? 10 : 4);
      ctx.fill();
      ctx.lineWidth = 1 / Math.min(cam.k, 1);
      ctx.strokeStyle = colors.border;
      ctx.stroke();
      const mark = this.marked.get(n.id);
      if (mark) this._ring(n, colors[mark], mark === "skipped");
      // Labels stay legible when zoomed out: at least LEGIBLE px on screen while the box is
      // tall enough to hold them (the text then fills more of the box).
      const size = Math.min(Math.max(12, LEGIBLE / cam.k), 0.7 * n.h);
      if (size * cam.k < LEGIBLE - 1.5) continue; // short boxes (stubs) take slightly smaller text
      ctx.fillStyle = custom ? textOn(custom) : colors.text;
      this._label(n, size);
    }
  }

  // A box's label: whole, on two lines, or abbreviated (labels.js) in the room it has; cut
  // with "…" only when none of those fits, and then not counted as labelled. An enlarged label
  // may run a little past its box, into the free space beside it in its row.
  _label(n, size) {
    const { ctx, cam } = this;
    const room = size > 12 ? Math.min(n.w * OVERRUN, this._roomOf(n)) : n.w - 2;
    const two = Math.min(size, 0.42 * n.h); // the size of each of two lines
    const twoLines = two * cam.k >= LEGIBLE - 1.5 && !(cam.k > 0.6 && n.sublabel && size <= 12);
    ctx.font = `bold ${size.toFixed(1)}px sans-serif`;
    let [lines, readable] = fitLabel(n.label, room, (t) => ctx.measureText(t).width, { scope: this._frameScope(n.parent) });
    if (lines.length === 1 && !readable && twoLines) {
      ctx.font = `bold ${two.toFixed(1)}px sans-serif`;
      [lines, readable] = fitLabel(n.label, room, (t) => ctx.measureText(t).width, { twoLines, scope: this._frameScope(n.parent) });
    }
    if (readable) this.labelled += 1;
    this.labels?.push([n.label, lines.join("\n"), readable]);
    const sub = lines.length === 1 && cam.k > 0.6 && n.sublabel && size <= 12;
    if (lines.length === 2) {
      ctx.fillText(lines[0], n.x, n.y - 0.55 * two);
      ctx.fillText(lines[1], n.x, n.y + 0.55 * two);
      return;
    }
    ctx.fillText(lines[0], n.x, sub ? n.y - 7 : n.y);
    if (sub) {
      ctx.font = "10px sans-serif";
      ctx.fillText(clip(n.sublabel, n.w, 10), n.x, n.y + 8);
    }
  }

  _fillBatched(boxes, colors) {
    const byColour = new Map();
    for (const n of boxes) {
      const colour = (this.fill && this.fill.get(n.id)) || kindColor(n.kind, colors);
      if (!byColour.has(colour)) byColour.set(colour, []);
      byColour.get(colour).push(n);
    }
    for (const [colour, list] of byColour) {
      this.ctx.fillStyle = colour;
      this.ctx.beginPath();
      for (const n of list) this.ctx.rect(n.x - n.w / 2, n.y - n.h / 2, n.w, n.h);
      this.ctx.fill();
    }
    for (const n of boxes) {
      const mark = this.marked.get(n.id);
      if (mark) this._ring(n, colors[mark], mark === "skipped");
    }
  }

  // The room of a box's label beside it (labelRoom over the boxes near its row), once per box.
  _roomOf(n) {
    let room = this.room.get(n);
    if (room === undefined) {
      const reach = n.w * OVERRUN;
      const near = this.index.boxesIn({ x0: n.x - reach, x1: n.x + reach, y0: n.y - n.h / 2, y1: n.y + n.h / 2 });
      this.room.set(n, (room = labelRoom(n, near)));
    }
    return room;
  }

  // The scope path the enclosing frame names on screen ("s:model.ln_f" -> "model.ln_f"), ""
  // when its name is not drawn whole (then a box's name is never shortened by it).
  _frameScope(id) {
    if (!id || !this.titled?.has(id)) return "";
    return id.startsWith("s:") ? id.slice(2) : "";
  }

  // A status ring outside the border, so a selected failing node shows both.
  _ring(n, colour, dashed) {
    const { ctx, cam } = this;
    const s = 1 / Math.min(cam.k, 1), pad = 5 * s;
    ctx.beginPath();
    roundRect(ctx, n.x - n.w / 2 - pad, n.y - n.h / 2 - pad, n.w + 2 * pad, n.h + 2 * pad, 7);
    ctx.lineWidth = 3 * s;
    ctx.strokeStyle = colour;
    // Skipped nodes get a dashed ring: not checked is not the same as passed.
    if (dashed) ctx.setLineDash([6 * s, 4 * s]);
    ctx.stroke();
    ctx.setLineDash([]);
  }

  // The selected box and the search hits on top of everything, at least a few pixels wide.
  _drawChosen(colors) {
    const { ctx, cam } = this;
    const min = 6 / cam.k;
    const draw = (n, colour) => {
      ctx.beginPath();
      roundRect(ctx, n.x - Math.max(n.w, min) / 2, n.y - Math.max(n.h, min) / 2, Math.max(n.w, min), Math.max(n.h, min), 4);
      ctx.lineWidth = 3 / Math.min(cam.k, 1);
      ctx.strokeStyle = colour;
      ctx.stroke();
    };
    for (const id of this.hits) {
      const n = this.byId.get(id);
      if (n && id !== this.selected) draw(n, colors.hit);
    }
    const sel = this.byId.get(this.selected);
    if (sel) draw(sel, colors.selected);
  }

  _bindPointer() {
    const c = this.canvas;
    let drag = null;
    c.addEventListener("pointerdown", (ev) => {
      drag = { x: ev.offsetX, y: ev.offsetY, moved: false };
      c.setPointerCapture(ev.pointerId);
    });
    c.addEventListener("pointermove", (ev) => {
      if (!drag) {
        // the whole label as a tooltip: a box may show a shortened one (labels.js)
        const n = this.nodeAt(ev.offsetX, ev.offsetY);
        c.title = n ? [n.label, n.sublabel].filter(Boolean).join("\n") : "";
        return;
      }
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

function roundRect(ctx, x, y, w, h, r) {
  ctx.moveTo(x + r, y);
  ctx.arcTo(x + w, y, x + w, y + h, r);
  ctx.arcTo(x + w, y + h, x, y + h, r);
  ctx.arcTo(x, y + h, x, y, r);
  ctx.arcTo(x, y, x + w, y, r);
  ctx.closePath();
}

// One arrow head at the end ``q`` of a run of flat points, as a closed subpath of the current
// path (filled by the caller, batched).
function arrowHead(ctx, p, q, size) {
  const [x0, y0, x1, y1] = [p[q - 4], p[q - 3], p[q - 2], p[q - 1]];
  const a = Math.atan2(y1 - y0, x1 - x0);
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - size * Math.cos(a - 0.4), y1 - size * Math.sin(a - 0.4));
  ctx.lineTo(x1 - size * Math.cos(a + 0.4), y1 - size * Math.sin(a + 0.4));
  ctx.closePath();
}

function textOn(rgb) {
  // Black or white text, whichever reads better on a scale colour "rgb(r, g, b)".
  const [r, g, b] = (rgb.match(/\d+/g) || [0, 0, 0]).map(Number);
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? "#111" : "#fff";
}

function clip(text, width, size = 12) {
  const max = Math.max(3, Math.floor(width / (0.6 * size)));
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}
