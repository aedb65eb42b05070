// Deep links: the URL fragment names the run, graph, node, expanded scopes, stubs and comparison.

import { state } from "./app.js";

export function updateURL() {
  const p = new URLSearchParams();
  if (state.run !== null) p.set("run", state.run);
  if (state.graph !== null) p.set("graph", state.graph);
  if (state.selected !== null) p.set("node", state.selected);
  if (state.expandAll) p.set("expand", "*");
  else if (state.expanded.size) p.set("expand", [...state.expanded].join(","));
  if (state.stub) p.set("stub", state.stub);
  if (state.compare) p.set("compare", `${state.compare.run}/${state.compare.graph}`);
  history.replaceState(null, "", "#" + p.toString());
}

export function readURL() {
  const p = new URLSearchParams(location.hash.slice(1));
  return {
    run: p.get("run"),
    graph: p.has("graph") ? Number(p.get("graph")) : null,
    node: p.has("node") ? Number(p.get("node")) : null,
    expand: p.get("expand") && p.get("expand") !== "*" ? p.get("expand").split(",") : [],
    expandAll: p.get("expand") === "*",
    stub: p.get("stub") || "",
    compare: p.get("compare"), // "run/graph": open in compare mode (tpx-inspect ab -o)
  };
}
