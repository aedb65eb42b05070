// Marks on boxes (check verdicts, the backward step running and the inputs it feeds) and the
// backward playback that moves them.

import { $, main, state, status } from "./app.js";
import { boxOf } from "./boxes.js";
import { ensureRecords } from "./load.js";
import { reveal } from "./picking.js";

export function applyMarks() {
  main.marked = new Map();
  // Skipped first, so that a box holding both a skipped and a failing node rings as failing.
  for (const id of state.skips.keys()) {
    const box = boxOf(id);
    if (box && !state.findings.has(id)) main.marked.set(box.id, "skipped");
  }
  for (const id of state.findings.keys()) {
    const box = boxOf(id);
    if (box) main.marked.set(box.id, "fail");
  }
  const i = state.play.index;
  if (i >= 0 && i < state.order.length) {
    const id = state.order[i];
    const box = boxOf(id);
    for (const e of state.byNode.get(id).inputs) {
      const b = e.src === null ? null : boxOf(e.src);
      if (b) main.marked.set(b.id, "accum");
    }
    if (box) main.marked.set(box.id, "active");
  }
  main.draw();
}

export async function step() {
  await ensureRecords();
  if (!state.order.length) return;
  state.play.index = (state.play.index + 1) % state.order.length;
  const id = state.order[state.play.index];
  await reveal(id);
  applyMarks();
  const box = boxOf(id);
  if (box) main.centerOn(box.id, main.cam.k);
  const n = state.byNode.get(id);
  const to = n.inputs.filter((e) => e.src !== null).map((e) => "#" + e.src).join(", ") || "nothing";
  status(`backward step ${state.play.index + 1}/${state.order.length}: #${id} ${n.title || n.name} — gradients flow to ${to}`);
  document.body.dataset.playStep = String(state.play.index);
}

export async function play() {
  if (state.play.timer) return stopPlay();
  await ensureRecords();
  $("play").textContent = "Pause";
  // About eight seconds for a whole pass, between 30 and 400 ms a step.
  const every = Math.min(400, Math.max(30, 8000 / Math.max(1, state.order.length)));
  state.play.timer = setInterval(() => {
    if (state.play.index >= state.order.length - 1) stopPlay();
    else step();
  }, every);
}

export function stopPlay() {
  clearInterval(state.play.timer);
  state.play.timer = null;
  $("play").textContent = "Play backward";
}
