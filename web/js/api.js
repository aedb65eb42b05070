// The viewer's only door to data: the tpx-inspect HTTP API, or the data embedded in a
// standalone HTML export (window.TPX_EMBED), answering the same calls.

const enc = encodeURIComponent;

export class ApiError extends Error {}

async function get(path) {
  const res = await fetch(path, { headers: { Accept: "application/json" } });
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
  view: (run, graph, expanded, stub = "") => {
    const q = expanded.map((s) => `expand=${enc(s)}`).concat(stub ? [`stub=${stub}`] : []).join("&");
    return get(`${graphPath(run, graph)}/view${q ? "?" + q : ""}`);
  },
  nodes: (run, graph) => getAll(`${graphPath(run, graph)}/nodes`, "nodes"),
  node: (run, graph, id) => get(`${graphPath(run, graph)}/nodes/${enc(id)}`),
  backward: (run, graph) => getAll(`${graphPath(run, graph)}/backward`, "nodes"),
  checks: (run, graph) => get(`${graphPath(run, graph)}/checks`),
  diff: (a, b, changed = true) =>
    getAll(`/api/diff?run_a=${enc(a.run)}&graph_a=${enc(a.graph)}&run_b=${enc(b.run)}&graph_b=${enc(b.graph)}&changed=${changed}`, "nodes"),
  exportUrl: (run, graph, format) => `${graphPath(run, graph)}/export?format=${enc(format)}`,
  feed: (run, since) => get(`/api/runs/${enc(run)}/feed?since=${since}&wait=10`),
};

// Embedded data of a standalone export: one graph, its view, nodes and details.
export function embedded(data) {
  const miss = (what) => Promise.reject(new ApiError(`${what} is not part of this standalone export`));
  return {
    runs: async () => [data.run],
    graphs: async () => ({ graphs: [data.graph] }),
    view: async () => data.view,
    nodes: async () => ({ nodes: data.nodes }),
    node: async (_r, _g, id) => data.details[id] || miss(`node ${id}`),
    backward: async () => ({ nodes: data.backward }),
    checks: async () => data.checks || miss("check results"),
    diff: () => miss("comparison"),
    exportUrl: () => null,
    feed: async () => ({ new: [], status: "ok" }),
  };
}
