// The plan panel: the tpx.compile plan stored with a run (tpx_inspect.capture_plan), shown beside
// the eager graph it was recorded from. Each kernel links to the GradFn node it came from (click:
// the node is selected in the graph); selecting a node marks the kernels it became.
// Self-contained: it reads the viewer through window.tpxViewer and the body's data-loaded mark,
// and asks the server for /api/runs/{run}/plans.

const STYLE = `
main.with-plan { grid-template-columns: minmax(0, 1fr) 340px 360px; }
main.compare.with-plan { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr) 340px 360px; }
#plan-panel ol { list-style: none; margin: 0; padding: 0; }
#plan-panel li { padding: 1px 4px; cursor: pointer; border-bottom: 1px solid var(--line); }
#plan-panel li.island, #plan-panel li.unlinked { cursor: default; color: var(--muted); }
#plan-panel li.marked { background: var(--line); font-weight: bold; }
#plan-panel .phase { color: var(--muted); }
#plan-panel li.optimizer { color: inherit; border-left: 3px solid var(--muted); }
`;

const plansOf = new Map(); // run -> its plans (fetched once)

async function fetchPlans(run) {
  if (!plansOf.has(run)) {
    let plans = [];
    const res = await fetch(`/api/runs/${encodeURIComponent(run)}/plans`, { headers: { Accept: "application/json" } });
    if (res.ok) plans = (await res.json()).plans;
    plansOf.set(run, plans);
  }
  return plansOf.get(run);
}

function bytes(n) {
  if (n === null || n === undefined) return "?";
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} kB` : `${n} B`;
}

function kernelRow(k) {
  const li = document.createElement("li");
  li.className = "mono";
  li.dataset.kernel = k.index;
  const time = k.seconds === null || k.seconds === undefined ? "" : ` · ${(k.seconds * 1e6).toFixed(1)} µs`;
  const linked = !(k.node_id === null || k.node_id === undefined);
  const optimizer = k.phase === "optimizer";
  // A lowered optimizer step's kernels name the optimizer, group and parameter: no GradFn node.
  const target = linked ? ` → ${k.node} #${k.node_id}` : optimizer && k.node ? ` · ${k.node}` : "";
  li.textContent = `${k.index} ${k.kind === "inplace" ? k.op + "_" : k.op}${target}${time}`;
  const phase = document.createElement("span");
  phase.className = "phase";
  phase.textContent = ` ${k.phase || ""}`;
  li.append(phase);
  if (optimizer) {
    li.classList.add("unlinked", "optimizer");
    li.dataset.optimizer = k.node || "";
    li.title = `optimizer step lowered into the plan: ${k.node || "?"}${k.source ? " at " + k.source : ""}`;
  } else if (!linked) {
    li.classList.add("unlinked");
    li.title = "made by no captured node (an eager island, a write-back)";
  } else {
    li.dataset.node = k.node_id;
    li.dataset.graph = k.graph;
    li.title = `from ${k.node} #${k.node_id} (graph ${k.graph})${k.source ? " at " + k.source : ""}`;
  }
  return li;
}

function render(panel, plans) {
  const parts = [];
  for (const p of plans) {
    const h = document.createElement("h2");
    h.textContent = `plan: ${p.name}`;
    const info = document.createElement("p");
    info.className = "muted";
    info.textContent = `${p.kernels.length} kernels · ${p.buffers} buffers · ${p.islands} eager island(s) · ` +
      `${p.optimizer_steps || 0} optimizer step(s) lowered · ` +
      `peak ${bytes(p.peak_bytes)} (eager ${bytes(p.eager_peak_bytes)})`;
    const list = document.createElement("ol");
    list.append(...p.kernels.map(kernelRow));
    parts.push(h, info, list);
  }
  panel.replaceChildren(...parts);
}

function go(li) {
  const viewer = window.tpxViewer;
  if (!viewer || li.dataset.node === undefined) return;
  const node = Number(li.dataset.node);
  const graph = Number(li.dataset.graph);
  if (graph === viewer.state.graph) {
    viewer.select(node);
  } else {
    const p = new URLSearchParams({ run: viewer.state.run, graph, node });
    location.hash = p.toString(); // the viewer's deep link: it loads that graph and node
  }
}

function mark(panel) {
  const state = window.tpxViewer?.state;
  if (!state) return;
  for (const li of panel.querySelectorAll("li[data-node]")) {
    const on = Number(li.dataset.node) === state.selected && Number(li.dataset.graph) === state.graph;
    li.classList.toggle("marked", on);
  }
}

export function initPlan() {
  const style = document.createElement("style");
  style.textContent = STYLE;
  document.head.append(style);
  const panel = document.createElement("aside");
  panel.id = "plan-panel";
  panel.hidden = true;
  panel.setAttribute("aria-label", "compiled plan");
  document.getElementById("panel").before(panel);
  const button = document.createElement("button");
  button.id = "plan";
  button.textContent = "Plan";
  button.title = "the tpx.compile plan of this run, beside the graph";
  button.hidden = true;
  document.querySelector("header").append(button);
  let shown = false;
  const show = (on) => {
    shown = on;
    panel.hidden = !on;
    document.getElementById("main").classList.toggle("with-plan", on);
    window.tpxViewer?.main?.draw?.();
  };
  button.addEventListener("click", () => show(!shown));
  panel.addEventListener("click", (e) => {
    const li = e.target.closest("li[data-node]");
    if (li) go(li);
  });
  let run = null;
  const refresh = async () => {
    const state = window.tpxViewer?.state;
    if (!state || !document.body.dataset.loaded || state.run === run) return mark(panel);
    run = state.run;
    const plans = await fetchPlans(run);
    render(panel, plans);
    button.hidden = !plans.length;
    if (!plans.length) show(false);
    document.body.dataset.planReady = String(plans.length);
    mark(panel);
  };
  new MutationObserver(refresh).observe(document.body, { attributes: true, attributeFilter: ["data-loaded"] });
  new MutationObserver(() => mark(panel)).observe(document.getElementById("panel"), { childList: true });
}
