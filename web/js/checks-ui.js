// Check verdicts in the viewer. Statuses, summaries and the headline come from the server, which
// derives them from the same report the CLI prints: the viewer adds no verdict of its own.

import { $, api, state, status } from "./app.js";
import { applyColour } from "./colour.js";
import { select } from "./picking.js";
import { applyMarks } from "./playback.js";

function noteNode(map, id, entry) {
  if (id === null || id === undefined) return;
  if (!map.has(id)) map.set(id, []);
  map.get(id).push(entry);
}

function collectVerdicts(report) {
  state.findings = new Map();
  state.skips = new Map();
  for (const c of report.checks) {
    for (const f of c.findings) noteNode(state.findings, f.node, { ...f, check: c.name });
    for (const r of c.reasons) for (const id of r.nodes) noteNode(state.skips, id, { check: c.name, reason: r.reason });
  }
  // Verdicts of the live check made while the run was recorded (custom Functions included).
  for (const v of report.live || []) {
    if (v.status === "fail") noteNode(state.findings, v.node, { check: `${v.check} (live)`, message: v.message, node: v.node });
    else if (v.status === "skipped") noteNode(state.skips, v.node, { check: `${v.check} (live)`, reason: v.message });
  }
}

// The verdict stays in the status bar until the graph changes (other messages come and go).
export function showVerdict(report) {
  const el = $("check-status");
  el.hidden = !report;
  el.textContent = report ? report.headline : "";
  el.title = el.textContent;
  el.className = report ? { pass: "ok", fail: "fail", skipped: "skipped", partial: "skipped" }[report.status] : "";
  if (!report) delete document.body.dataset.checked;
}

export async function runChecks() {
  status("running checks on the saved values…");
  const report = await api.checks(state.run, state.graph);
  state.report = report;
  collectVerdicts(report);
  state.checked = true;
  applyMarks();
  applyColour();
  status(report.headline);
  showVerdict(report);
  document.body.dataset.checked = report.status;
  if (state.findings.size) {
    const rank = (id) => {
      const i = state.order.indexOf(id);
      return i < 0 ? Infinity : i;
    };
    const first = [...state.findings.keys()].sort((a, b) => rank(a) - rank(b))[0];
    await select(first);
    status(report.headline); // again: the selection's layout message replaced it
  }
}
