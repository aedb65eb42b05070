// Layouts of the view model, asked through the layout worker (layout-worker.js) so that
// decoding and indexing a big answer happen off the page's thread; in the page when no worker
// can run (a page opened from a file). A layout in flight can be cancelled.

import { ApiError } from "./api.js";
import { rowsOf } from "./drawable.js";

export class Cancelled extends Error {}

let worker = null; // null: not started yet; false: cannot run here
let ready = false; // the worker has loaded its modules and answers at once
let next = 0;
const waiting = new Map(); // request id -> {resolve, reject}

function ensureWorker() {
  if (worker === null) {
    try {
      worker = new Worker(new URL("./layout-worker.js", import.meta.url), { type: "module" });
      worker.onmessage = ({ data }) => (data.ready ? (ready = true) : answer(data));
      worker.onerror = (ev) => fail(ev.message || "the layout worker failed");
    } catch {
      worker = false;
    }
  }
  return worker;
}

// The worker could not start (or died): every waiting request falls back to the page.
function fail(message) {
  worker?.terminate?.();
  worker = false;
  for (const w of waiting.values()) w.reject(new WorkerGone(message));
  waiting.clear();
}

class WorkerGone extends Error {}

function answer(data) {
  const w = waiting.get(data.id);
  if (!w) return;
  waiting.delete(data.id);
  if (data.meta) w.resolve(received(data));
  else if (data.packedTree) w.resolve(data.packedTree);
  else if (data.status === 404 || data.status === 405) w.resolve(null); // an older server
  else if (data.status) w.reject(new ApiError(`${data.status}: ${data.detail}`));
  else w.reject(data.aborted ? new Cancelled("layout cancelled") : new Error(data.error));
}

// The worker's columns as the rows the page draws: a loop (no deep clone of 100k objects),
// in slices with a pause between them, so the page answers meanwhile.
async function received({ meta, cols, points, boxHeight, packed, ms }) {
  const t0 = performance.now();
  if (ms.net) requests.push(Object.fromEntries(Object.entries(ms.net).map(([k, t]) => [k, t - performance.timeOrigin])));
  const graph = { width: meta.width, height: meta.height, points, boxHeight, byId: new Map() };
  for (const part of ["nodes", "edges", "frames"]) {
    const c = cols[part], rows = new Array(c.n);
    for (let from = 0; from < c.n; from += SLICE) {
      const to = Math.min(c.n, from + SLICE);
      rowsOf(c, rows, from, to);
      if (part === "nodes") for (let i = from; i < to; i++) graph.byId.set(rows[i].id, rows[i]);
      if (c.n > SLICE) await pause();
    }
    graph[part] = rows;
  }
  return { meta, graph, packed, ms: { ...ms, rows: performance.now() - t0 } };
}

// A pause that lets the page answer input and draw before the next slice of work.
export const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

const SLICE = 5_000;

// The worker's requests on the page's clock (ms from navigation), for the benchmark's timeline.
export const requests = [];

// Started with the page, so that it is up by the first expansion.
export function startWorker() {
  ensureWorker();
}

// {meta, graph, packed, ms} from the worker, {res} from the page, or null (no view model).
// While the worker is still starting, a small layout (not every group open) is asked for here:
// the first screen does not wait for the worker's modules.
// ``extra``: {keep: true} (the worker keeps this layout as the base of regions) or
// {region: rect} (a GET of a region, drawn over the kept base: worker only, else null).
export async function fetchLayout(url, body, inPage, extra = {}) {
  if (url && ensureWorker() && (ready || body?.expand_all || extra.region)) {
    try {
      return await ask({ url, body, ...extra });
    } catch (err) {
      if (!(err instanceof WorkerGone)) throw err;
    }
  }
  if (extra.region) return null;
  const res = await inPage();
  return res && { res };
}

function ask(message) {
  const id = ++next;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject, tree: Boolean(message.tree) });
    worker.postMessage({ id, ...message });
  });
}

// The view model's group tree, fetched, parsed and packed by the worker (tree.js); from the
// page (``inPage``) when no worker runs. Null: the server has no view model.
export async function fetchTree(url, inPage) {
  if (url && ensureWorker()) {
    try {
      return await ask({ tree: url });
    } catch (err) {
      if (!(err instanceof WorkerGone)) throw err;
    }
  }
  return inPage();
}

// Abort every layout in flight (the page's view stays as it was).
export function cancelLayouts() {
  if (!worker) return false;
  const ids = layoutIds();
  for (const id of ids) worker.postMessage({ cancel: id });
  return ids.length > 0;
}

export function layoutsInFlight() {
  return layoutIds().length;
}

const layoutIds = () => [...waiting].filter(([, w]) => !w.tree).map(([id]) => id);
