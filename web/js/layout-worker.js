// The layout worker: asks the server for a layout, decodes the answer and builds the spatial
// index away from the page's thread, so a big layout (100k boxes: tens of MB of JSON) never
// freezes the page. Messages in: {id, url, body} (a request: POST, or GET when body is null;
// ``keep``: a token, kept as the base of later regions), {id, url, body, region: {base: token,
// x0, y0, x1, y1}} (a region of the kept base's state: drawn over the base, region.js), {id, tree: url} (the view model's group tree,
// packed: tree.js), {cancel: id} (abort it).
// Out: {id, meta, cols (boxes, edges, frames as columns), points, packed, ms},
// {id, status, detail} (an HTTP error) or {id, aborted, error}; {ready} once loaded.

import { columnBuffers, columns, drawableLayout } from "./drawable.js";
import { compose } from "./region.js";
import { medianHeight, pack, transferables } from "./spatial.js";
import { packTree, treeBuffers } from "./tree.js";

const pending = new Map();
let base = null; // the kept layout regions are drawn over: {key, graph}
self.postMessage({ ready: true });

self.onmessage = ({ data }) => {
  if (data.cancel !== undefined) pending.get(data.cancel)?.abort();
  else if (data.tree) tree(data);
  else layout(data);
};

async function tree({ id, tree: url }) {
  try {
    const res = await fetch(url, { headers: { Accept: "application/json" } });
    if (!res.ok) {
      self.postMessage({ id, status: res.status, detail: await detailOf(res) });
      return;
    }
    const packed = packTree(await res.json());
    self.postMessage({ id, packedTree: packed }, treeBuffers(packed));
  } catch (err) {
    self.postMessage({ id, error: String(err) });
  }
}

async function layout({ id, url, body, keep = false, region = null }) {
  const control = new AbortController();
  pending.set(id, control);
  const t0 = performance.now();
  try {
    // body null: GET (a layout asked again by its key), else the state in a POST body
    const ask = body === null ? { headers: { Accept: "application/json" } }
      : { method: "POST", body: JSON.stringify(body), headers: { Accept: "application/json", "Content-Type": "application/json" } };
    const res = await fetch(url, { ...ask, signal: control.signal });
    if (!res.ok) {
      self.postMessage({ id, status: res.status, detail: await detailOf(res) });
      return;
    }
    const text = await res.text();
    const t1 = performance.now();
    const answer = JSON.parse(text);
    let graph = drawableLayout(answer);
    if (keep) base = { keep, graph: { ...graph, points: graph.points.slice() } };
    if (region) {
      if (!base || base.keep !== region.base) throw new Error(`no base layout kept for ${region.base}`);
      graph = compose(base.graph, graph, region);
      answer.coarse = graph.nodes.filter((n) => n.block).length;
      // a region holding the whole graph (the Fit view's) is the better base: kept instead, so
      // that what lies outside later regions (and the minimap) shows its blocks
      if (region.x0 <= 0 && region.y0 <= 0 && region.x1 >= graph.width && region.y1 >= graph.height) base.graph = { ...graph, points: graph.points.slice() };
      answer.region = region;
    }
    const packed = pack(graph.nodes, graph.edges, graph.points);
    const meta = { ...answer, boxes: undefined, edges: undefined, frames: undefined };
    const cols = { nodes: columns(graph.nodes), edges: columns(graph.edges), frames: columns(graph.frames) };
    const ms = { request: t1 - t0, decode: performance.now() - t1, net: timingOf(url) };
    const moved = [...transferables(packed), ...Object.values(cols).flatMap(columnBuffers), graph.points.buffer];
    const boxHeight = medianHeight(graph.nodes);
    self.postMessage({ id, meta, cols, points: graph.points, boxHeight, packed, ms }, moved);
  } catch (err) {
    self.postMessage({ id, aborted: err.name === "AbortError", error: String(err) });
  } finally {
    pending.delete(id);
  }
}

async function detailOf(res) {
  try {
    const detail = (await res.json()).detail;
    return typeof detail === "string" ? detail : JSON.stringify(detail);
  } catch {
    return res.statusText;
  }
}

// The request's resource timing in epoch ms (the page's timeline does not see a worker's
// requests): sent, first byte, last byte. Cleared after, so the buffer never fills.
function timingOf(url) {
  const e = performance.getEntriesByName(url).pop();
  performance.clearResourceTimings();
  if (!e) return null;
  const at = (t) => performance.timeOrigin + t;
  return { start: at(e.startTime), sent: at(e.requestStart || e.startTime), first: at(e.responseStart), end: at(e.responseEnd) };
}
