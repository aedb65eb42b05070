// Exports of the current view: SVG built from the laid-out graph, PNG from the canvas,
// DOT/JSON/standalone HTML fetched from the server.

import { kindColor, themeColors } from "./colors.js";

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

export function toSVG(graph, fill = null) {
  const colors = themeColors();
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${graph.width + 20} ${graph.height + 20}" width="${graph.width + 20}" height="${graph.height + 20}" font-family="sans-serif">`];
  out.push(`<rect width="100%" height="100%" fill="${colors.background}"/>`);
  out.push(`<g transform="translate(10,10)">`);
  for (const e of graph.edges) {
    const d = [];
    const p = graph.points;
    for (let i = e.p; i < e.q; i += 2) d.push(`${i > e.p ? "L" : "M"}${p[i].toFixed(1)},${p[i + 1].toFixed(1)}`);
    out.push(`<path d="${d.join(" ")}" fill="none" stroke="${colors.edge}"/>`);
  }
  for (const n of graph.nodes) {
    const c = (fill && fill.get(n.id)) || kindColor(n.kind, colors);
    out.push(`<g data-id="${esc(n.id)}"><rect x="${n.x - n.w / 2}" y="${n.y - n.h / 2}" width="${n.w}" height="${n.h}" rx="4" fill="${c}" stroke="${colors.border}"/>`);
    out.push(`<text x="${n.x}" y="${n.y - (n.sublabel ? 4 : -4)}" text-anchor="middle" font-size="12" fill="${colors.text}">${esc(n.label)}</text>`);
    if (n.sublabel) out.push(`<text x="${n.x}" y="${n.y + 11}" text-anchor="middle" font-size="10" fill="${colors.text}">${esc(n.sublabel)}</text>`);
    out.push(`</g>`);
  }
  out.push("</g></svg>");
  return out.join("\n");
}

export function download(name, content, type) {
  const blob = content instanceof Blob ? content : new Blob([content], { type });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

export function canvasPNG(canvas) {
  return new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
}

// One HTML file that opens without the server: the SVG of the current view, the node records,
// and a small inline script for pan, zoom, search and node details.
export function toStandaloneHTML(graph, nodes, title) {
  const svg = toSVG(graph);
  const boxes = graph.nodes.map((n) => ({ id: n.id, node: n.node ?? null, label: n.label }));
  const data = JSON.stringify({ nodes, boxes }).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
body{margin:0;display:grid;grid-template-columns:1fr 340px;height:100vh;font:13px system-ui,sans-serif}
#view{overflow:hidden;cursor:grab} #view svg{width:100%;height:100%}
aside{border-left:1px solid #ccc;padding:8px;overflow:auto} pre{white-space:pre-wrap;font-size:12px}
g[data-id]{cursor:pointer} g.sel rect{stroke:#d97706;stroke-width:3}
</style></head><body>
<div id="view">${svg}</div>
<aside><h2>${esc(title)}</h2><input id="q" placeholder="search op or scope" aria-label="search">
<p id="count"></p><pre id="info">Click a node.</pre></aside>
<script id="tpx-data" type="application/json">${data}</script>
<script>
(() => {
  const data = JSON.parse(document.getElementById("tpx-data").textContent);
  const byId = new Map(data.nodes.map((n) => [n.id, n]));
  const box = new Map(data.boxes.map((b) => [b.id, b]));
  const svg = document.querySelector("#view svg");
  let vb = svg.viewBox.baseVal, drag = null;
  svg.addEventListener("wheel", (e) => { e.preventDefault(); const f = Math.exp(e.deltaY * 0.0015);
    const r = svg.getBoundingClientRect(), px = vb.x + (e.clientX - r.left) / r.width * vb.width,
      py = vb.y + (e.clientY - r.top) / r.height * vb.height;
    vb.x = px - (px - vb.x) * f; vb.y = py - (py - vb.y) * f; vb.width *= f; vb.height *= f; }, {passive: false});
  svg.addEventListener("pointerdown", (e) => { drag = [e.clientX, e.clientY]; });
  svg.addEventListener("pointerup", () => { drag = null; });
  svg.addEventListener("pointermove", (e) => { if (!drag) return; const r = svg.getBoundingClientRect();
    vb.x -= (e.clientX - drag[0]) / r.width * vb.width; vb.y -= (e.clientY - drag[1]) / r.height * vb.height;
    drag = [e.clientX, e.clientY]; });
  svg.addEventListener("click", (e) => { const g = e.target.closest("g[data-id]"); if (!g) return;
    document.querySelectorAll("g.sel").forEach((x) => x.classList.remove("sel")); g.classList.add("sel");
    const b = box.get(g.dataset.id), n = b && b.node !== null ? byId.get(b.node) : null;
    document.getElementById("info").textContent = JSON.stringify(n || b, null, 1); });
  document.getElementById("q").addEventListener("input", (e) => { const q = e.target.value.toLowerCase(); let c = 0;
    document.querySelectorAll("g[data-id]").forEach((g) => { const b = box.get(g.dataset.id);
      const n = b && b.node !== null ? byId.get(b.node) : null;
      const hit = q && ((b.label || "").toLowerCase().includes(q) || (n && ((n.scope || "") + " " + (n.op || "")).toLowerCase().includes(q)));
      g.style.opacity = !q || hit ? 1 : 0.25; c += hit ? 1 : 0; });
    document.getElementById("count").textContent = q ? c + " hits" : ""; });
})();
</script></body></html>`;
}
