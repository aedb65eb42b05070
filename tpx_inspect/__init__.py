"""tpx_inspect: capture TPX graphs into a documented trace format, read them, export them.

API overview (others build the CLI, the server, the viewer and the checks on it):

- Capture: ``with capture(policy, values=..., params=..., path=..., threads=...) as cap:``
  (also a decorator) records every graph whose backward runs inside (by default in the
  capturing thread only; ``threads="all"`` for every thread); ``cap.add(loss)`` records a
  graph without backward; ``cap.trace`` is the :class:`Trace`. ``trace(fn, *args)`` captures one
  call; ``run_script(path, args, output=...)`` runs a script under capture and always saves.
  :class:`Policy` picks steps (``first:N``, ``every:K``, ``nonfinite``, ``all``).
- Records (``tpx_inspect.records``, frozen dataclasses; per-node ones in ``nodes``, the
  array storage behind them in ``tables``): :class:`Trace` -> ``runs`` -> :class:`Run`
  (status, steps, policy, error) -> ``graphs`` -> :class:`Graph` (step, kind
  ``backward``/``roots``/``partial``, detail ``full``/``stats``, structure) with ``nodes``
  (:class:`Node`: id, kind ``leaf``/``param``/``op``/``loss``, op, name, label, params,
  scope, source, inputs (:class:`Edge`), shape, dtype, saved) and ``stats``
  (:class:`NodeStats` per node: output, grad, grads_out, consts, forward/backward seconds,
  order, released), ``order`` (node ids in backward execution order), ``accumulations``,
  ``peak_saved_bytes``. Reading: ``graph.node(i)``, ``input_nodes(i)``, ``consumers(i)``,
  ``output(i)``, ``grad(i)``, ``grads_out(i)``, ``backward_order``, ``finite``,
  ``find(scope=, op=, source=, kind=)``, ``value(summary)``, ``node_values(i)`` (full arrays
  for replay); ``run.step(k)``, ``trace.graph(run, id)``.
- Format: ``save(trace, path)`` writes JSON + ``.npz`` sidecar; ``load(path)`` validates
  (:class:`TraceFormatError`); ``to_json(trace, inline=...)`` gives the document (and the
  arrays); the JSON Schema is ``schema_path()``; docs/trace-format.md describes it all.
- Checks (``tpx_inspect.checks``, see docs/checks.md): ``gradcheck(fn, inputs, ...)``,
  ``gradgradcheck``, ``run_all_checks(fn, inputs)``, ``run_graph_checks(graph)``,
  ``run_trace_checks(path)`` return a :class:`Report` naming the first failing node.
- Export: ``to_dot(graph, ...)``, ``render(graph, path, format=...)`` (Graphviz binaries),
  ``to_model_explorer(graph)``; ``collapse(graph, ...)`` groups scopes and stubs long edges.

>>> import tpx as tp, tpx_inspect
>>> with tpx_inspect.capture() as cap:
...     w = tp.ones((3, 2), requires_grad=True)
...     loss = (tp.ones((4, 3)) @ w).relu().mean()
...     loss.backward()
>>> g = cap.trace.graphs[0]
>>> [n.title for n in g.nodes]
['leaf', 'matmul', 'relu', 'mean']
>>> g.grad(0).shape, g.node(1).inputs[1].shape
((3, 2), (3, 2))
"""

from tpx_inspect._run import ScriptResult, run_script, trace
from tpx_inspect.capture import (
    DEFAULT_POLICY,
    FORMAT_VERSION,
    Capture,
    Policy,
    capture,
)
from tpx_inspect.checks import (
    GradcheckError,
    Report,
    gradcheck,
    gradgradcheck,
    run_all_checks,
    run_graph_checks,
    run_trace_checks,
)
from tpx_inspect.collapse import View, collapse
from tpx_inspect.errors import (
    ExportError,
    GraphvizNotFoundError,
    InspectError,
    MissingDependencyError,
    TraceFormatError,
)
from tpx_inspect.export import render, to_dot, to_model_explorer, to_svg
from tpx_inspect.format import load, save, schema_path, to_json
from tpx_inspect.plans import capture_plan
from tpx_inspect.records import (
    Accumulation,
    Edge,
    ErrorInfo,
    Graph,
    Node,
    NodeStats,
    NodeValues,
    Run,
    Saved,
    Source,
    Trace,
)
from tpx_inspect.summary import TensorSummary, summarize

__all__ = [
    "DEFAULT_POLICY",
    "FORMAT_VERSION",
    "Accumulation",
    "Capture",
    "Edge",
    "ErrorInfo",
    "ExportError",
    "GradcheckError",
    "Graph",
    "GraphvizNotFoundError",
    "InspectError",
    "MissingDependencyError",
    "Node",
    "NodeStats",
    "NodeValues",
    "Policy",
    "Report",
    "Run",
    "Saved",
    "ScriptResult",
    "Source",
    "TensorSummary",
    "Trace",
    "TraceFormatError",
    "View",
    "capture",
    "capture_plan",
    "collapse",
    "gradcheck",
    "gradgradcheck",
    "load",
    "render",
    "run_all_checks",
    "run_graph_checks",
    "run_script",
    "run_trace_checks",
    "save",
    "schema_path",
    "summarize",
    "to_dot",
    "to_json",
    "to_model_explorer",
    "to_svg",
    "trace",
]  # fmt: skip
