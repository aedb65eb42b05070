// The viewer's only door to data: the tpx-inspect HTTP API.

const enc = encodeURIComponent;

export class ApiError extends Error {}

async function get(path, init = {}) {
  const res = await fetch(path, { ...init, headers: { Accept: "application/json", ...(init.headers || {}) } });
  if (!res.ok) {
    let detail = res.statusText;
    try {
      detail = (await res.json()).detail || detail;
    } catch {
      /* not JSON */
    }
    throw new ApiError(`${res.status}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  }
  return res.json();
}

// The view state travels in the body, never in thousands of URL parameters.
const post = (path, body) => get(path, { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });

// A view-model endpoint the server may not have (an older server): null instead of an error.
async function optional(promise) {
  try {
    return await promise;
  } catch (err) {
    if (err instanceof ApiError && /^(404|405):/.test(err.message)) return null;
    throw err;
  }
}

// Every item of a paginated list endpoint (the server answers at most 1000 per page).
async function getAll(path, key) {
  const sep = path.includes("?") ? "&" : "?";
  const first = await get(`${path}${sep}offset=0&limit=1000`);
  const total = first.page.total;
  // One page at a time, so that the requests a person makes meanwhile are not queued behind.
  const items = first[key].slice();
  for (let offset = 1000; offset < total; offset += 1000) {
    items.push(...(await get(`${path}${sep}offset=${offset}&limit=1000`))[key]);
  }
  return { ...first, [key]: items };
}

function graphPath(run, graph) {
  return `/api/runs/${enc(run)}/graphs/${enc(graph)}`;
}

export const http = {
  runs: () => get("/api/runs"),
  graphs: (run) => getAll(`/api/runs/${enc(run)}/graphs`, "graphs"),
  nodes: (run, graph) => getAll(`${graphPath(run, graph)}/nodes`, "nodes"),
  node: (run, graph, id) => get(`${graphPath(run, graph)}/nodes/${enc(id)}`),
  backward: (run, graph) => getAll(`${graphPath(run, graph)}/backward`, "nodes"),
  checks: (run, graph) => get(`${graphPath(run, graph)}/checks`),
  diff: (a, b, changed = true) =>
    getAll(`/api/diff?run_a=${enc(a.run)}&graph_a=${enc(a.graph)}&run_b=${enc(b.run)}&graph_b=${enc(b.graph)}&changed=${changed}`, "nodes"),
  exportUrl: (run, graph, format) => `${graphPath(run, graph)}/export?format=${enc(format)}`,
  feed: (run, since) => get(`/api/runs/${enc(run)}/feed?since=${since}&wait=10`),
  // The view model (issue 14): the group tree once, layouts of a state, records on demand,
  // search and colour statistics computed by the server, value figures.
  tree: (run, graph) => optional(get(`${graphPath(run, graph)}/tree`)),
  treeUrl: (run, graph) => new URL(`${graphPath(run, graph)}/tree`, location.href).href,
  layout: (run, graph, body) => optional(post(`${graphPath(run, graph)}/layout`, body)),
  layoutUrl: (run, graph) => new URL(`${graphPath(run, graph)}/layout`, location.href).href,
  locate: (run, graph, node, key) => optional(get(`${graphPath(run, graph)}/locate?node=${enc(node)}&key=${enc(key)}`)),
  layoutByKey: (run, graph, key) => optional(get(`${graphPath(run, graph)}/layout?key=${enc(key)}`)),
  records: (run, graph, ids, fields) => post(`${graphPath(run, graph)}/records`, { ids, fields }),
  search: (run, graph, q, key, limit = 1000) =>
    get(`${graphPath(run, graph)}/search?q=${enc(q)}&key=${enc(key)}&limit=${limit}`),
  colours: (run, graph, metric, key) => get(`${graphPath(run, graph)}/colours?metric=${enc(metric)}&key=${enc(key)}`),
  heatmap: (run, graph, id, which, max = 128) =>
    optional(get(`${graphPath(run, graph)}/nodes/${enc(id)}/heatmap?which=${enc(which)}&max=${max}`)),
  histogram: (run, graph, id, which, bins = 40) =>
    optional(get(`${graphPath(run, graph)}/nodes/${enc(id)}/histogram?which=${enc(which)}&bins=${bins}`)),
};
