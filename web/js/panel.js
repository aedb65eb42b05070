// The side panel: everything recorded about one node, a scope box or a stub.

import { gridOf, heatmap, histogram, histogramOf } from "./heatmap.js";

const h = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
};

export const fmt = (v) => {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v;
  if (typeof v === "number") {
    if (Number.isInteger(v)) return String(v);
    const a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : v.toPrecision(4);
  }
  return JSON.stringify(v);
};

export const bytes = (n) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(2)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);
export const seconds = (s) => (s === null || s === undefined ? "—" : s < 1e-3 ? `${(s * 1e6).toFixed(1)} µs` : `${(s * 1e3).toFixed(2)} ms`);
const shape = (s) => `(${s.join(", ")}${s.length === 1 ? "," : ""})`;

function kv(rows) {
  return h("table", { class: "kv" }, rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))));
}

function summaryTable(title, s, values, figures = null) {
  if (!s) return [h("h3", {}, title), h("p", { class: "muted" }, "not recorded")];
  const bad = s.nan || s.inf;
  const rows = [
    ["shape", `${shape(s.shape)} ${s.dtype}`],
    ["min / max", `${fmt(s.min)} / ${fmt(s.max)}`],
    ["mean / std", `${fmt(s.mean)} / ${fmt(s.std)}`],
    ["norm", fmt(s.norm)],
    ["NaN / Inf / zeros", h("span", { class: bad ? "fail" : "" }, `${s.nan} / ${s.inf} / ${s.zeros}`)],
    ["preview", h("span", { class: "mono" }, (s.preview || []).map(fmt).join(", "))],
  ];
  return [h("h3", {}, title), kv(rows), ...valueFigures(title, values, figures)];
}

// The value itself: a heatmap (1-D as one row, N-D with leading axes as rows) and a histogram,
// when the trace kept it. Values cut by the server's limit get the histogram of those at hand.
function valueFigures(title, values, figures = null) {
  if (!values || values.total < 2) return [];
  const grid = gridOf(values);
  if (grid) return [heatmap(grid), histogram(histogramOf(values.data), `histogram of ${title}`)];
  // Cut by the page limit: the server's downsampled heatmap and its histogram of every value.
  const slot = h("div", { class: "value-figures" }, h("p", { class: "muted" }, `${values.total} values: loading figures…`));
  if (figures) {
    figures().then(([grid2, hist]) => {
      slot.replaceChildren(...[grid2 && heatmap(grid2), hist && histogram(hist, `histogram of ${title}`)].filter(Boolean));
    }).catch((err) => slot.replaceChildren(h("p", { class: "muted" }, String(err))));
  } else slot.replaceChildren(histogram(histogramOf(values.data), `histogram of the first ${values.data.length} of ${title}`));
  return [slot];
}

// A saved tensor's values: the node's output (slot -1) or its input K, as the trace kept them.
function savedValue(s, values, fig) {
  const which = s.slot < 0 ? "output" : `input.${s.slot}`;
  const v = values?.[which];
  if (!v) return [];
  const name = `saved ${s.slot < 0 ? "output" : `input ${s.slot}`}`;
  const head = v.data.slice(0, 8).map(fmt).join(", ") + (v.total > 8 ? ", …" : "");
  return [h("p", { class: "mono saved-values" }, `${name}: ${head}`), ...valueFigures(name, v, fig(which))];
}

function replace(panel, ...children) {
  panel.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
}

// One line per check for this node, with the status words the CLI prints: FAIL and SKIPPED
// lines name the check and say why; checks that skipped the whole graph say so too.
function checkLines(id, ctx) {
  const lines = [];
  const failed = new Set(), skipped = new Set();
  for (const f of ctx.findings.get(id) || []) {
    failed.add(f.check);
    lines.push(h("li", { class: "fail" }, `FAIL ${f.check}: ${f.message}`));
  }
  for (const s of ctx.skips.get(id) || []) {
    if (failed.has(s.check)) continue;
    skipped.add(s.check);
    lines.push(h("li", { class: "skipped" }, `SKIPPED ${s.check}: ${s.reason}`));
  }
  if (!ctx.report) return lines;
  const passed = [];
  for (const c of ctx.report.checks) {
    if (failed.has(c.name) || skipped.has(c.name)) continue;
    if (c.status === "skipped") lines.push(h("li", { class: "skipped" }, `SKIPPED ${c.name}: ${c.reasons.map((r) => r.reason).join("; ")}`));
    else passed.push(c.name);
  }
  if (passed.length) lines.push(h("li", { class: "ok" }, `PASS ${passed.join(", ")}`));
  return lines;
}

export function renderNode(panel, detail, ctx) {
  const n = detail.node;
  const link = (id) => h("a", { class: "jump", tabindex: "0", onclick: () => ctx.select(id), onkeydown: (e) => e.key === "Enter" && ctx.select(id) }, `#${id}`);
  const inputs = n.inputs.map((e, i) =>
    h("tr", {}, h("td", {}, i), h("td", {}, e.src === null ? "const" : link(e.src)), h("td", { class: "mono" }, `${shape(e.shape)} ${e.dtype}`)));
  const saved = detail.saved.map((s) => h("tr", {}, h("td", {}, s.slot < 0 ? "output" : `input ${s.slot}`), h("td", { class: "mono" }, `${shape(s.shape)} ${s.dtype}`), h("td", {}, bytes(s.bytes))));
  const fig = (which) => (ctx.figures ? () => ctx.figures(n.id, which) : null);
  const savedValues = detail.saved.flatMap((s) => savedValue(s, detail.values, fig));
  const checks = checkLines(n.id, ctx);
  const diff = ctx.diff && ctx.diff.get(n.id);
  replace(
    panel,
    h("h2", {}, `#${n.id} ${n.title || n.name}`),
    kv([
      ["op", n.op || n.kind],
      ["kind", n.kind],
      ["scope", n.scope || "—"],
      ["source", h("span", { class: "mono" }, n.source || "—")],
      ["output", `${shape(n.shape)} ${n.dtype}`],
      ["backward order", n.order === null ? "did not run" : String(n.order)],
      ["forward time", seconds(n.forward_seconds)],
      ["backward time", seconds(n.backward_seconds)],
      ["released at step", detail.released === null ? "—" : String(detail.released)],
      ...(n.overrides ? [["overridden", h("span", { class: "mono" }, Object.entries(n.overrides).map(([k, v]) => `${k} ${v}`).join(", "))]] : []),
      ["consumers", h("span", {}, detail.consumers.flatMap((c, i) => (i ? [", ", link(c)] : [link(c)])))],
    ]),
    h("h3", {}, "params"),
    h("pre", { class: "mono" }, Object.keys(detail.params).length ? JSON.stringify(detail.params, null, 1) : "—"),
    h("h3", {}, "inputs"),
    h("table", { class: "kv" }, inputs.length ? inputs : h("tr", {}, h("td", { class: "muted" }, "none (leaf)"))),
    h("h3", {}, "saved for backward"),
    h("table", { class: "kv" }, saved.length ? saved : h("tr", {}, h("td", { class: "muted" }, "nothing"))),
    ...savedValues,
    ...summaryTable("output", detail.output, detail.values?.output, fig("output")),
    ...summaryTable("gradient (incoming)", detail.grad, detail.values?.grad, fig("grad")),
    ...detail.grads_out.flatMap((g, i) => (g ? summaryTable(`gradient to input ${i}`, g, detail.values?.[`grad_out.${i}`], fig(`grad_out.${i}`)) : [])),
    h("h3", {}, "checks"),
    ctx.checked ? h("ul", { id: "node-checks" }, checks) : h("p", { class: "muted" }, "not run (press X)"),
    diff ? h("h3", {}, "compared") : null,
    diff ? kv([["status", diff.status], ["changes", diff.changes.join("; ") || "—"], ["max |Δ output|", fmt(diff.output_diff)], ["max |Δ grad|", fmt(diff.grad_diff)], ["saved bytes", `${bytes(diff.saved_bytes_a)} → ${bytes(diff.saved_bytes_b)}`]]) : null,
  );
}

export function renderBox(panel, box, ctx) {
  const rows = [["kind", box.kind], ["label", box.label]];
  if (box.scope) rows.push(["scope", box.scope]);
  if (box.size > 1) rows.push(["nodes inside", String(box.size)]);
  const actions = [];
  if (box.count > 1) rows.push(["copies", `${box.count} identical blocks`]);
  if (box.group !== null) actions.push(h("button", { onclick: () => ctx.toggle(box.group) }, "Expand (Enter)"));
  if (box.kind === "stub" && box.node !== null) actions.push(h("button", { onclick: () => ctx.select(box.node) }, `Jump to #${box.node} (Enter)`));
  panel.replaceChildren(h("h2", {}, box.label), kv(rows), ...actions);
}

export function renderMessage(panel, text, cls = "muted") {
  panel.replaceChildren(h("p", { class: cls }, text));
}
