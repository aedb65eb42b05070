"""Run the checks: on a function with its inputs, on a script, on a saved trace.

These are the library calls behind ``tpx-inspect gradcheck TARGET`` and ``tpx-inspect check
script.py``: each returns a :class:`~tpx_inspect.checks.report.Report` whose ``exit_code`` is
0 when every check passed and 1 when one failed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tpx
from tpx_inspect.checks import registry
from tpx_inspect.checks.function_checks import fresh
from tpx_inspect.checks.local import LocalOptions
from tpx_inspect.checks.record import record
from tpx_inspect.checks.registry import CheckContext, check_names
from tpx_inspect.checks.report import CheckResult, Finding, Report, Skip
from tpx_inspect.records import Graph, Trace

GRAPH_CHECKS = check_names("graph")
"""The checks that read a recorded graph (live or from a trace), in the order they run."""

FUNCTION_CHECKS = check_names()
"""Every check :func:`run_all_checks` can run on a function, in the order they run."""

Progress = Callable[[str, int, int], None]
"""``progress(check, index, total)``: called before each check starts (for a progress bar)."""


def run_graph_checks(
    graph: Graph,
    checks: Sequence[str] = GRAPH_CHECKS,
    *,
    local_options: LocalOptions | None = None,
    progress: Progress | None = None,
    node_progress: Progress | None = None,
    client: Any = None,
) -> Report:
    """Run the graph checks named in ``checks`` on a recorded graph.

    ``node_progress(check, done, total)`` counts the nodes a long check has done; with
    ``client`` (a ``dask.distributed.Client``) the local check runs on its workers.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     x = tp.asarray([0.5, 2.0], requires_grad=True)
    ...     (x.exp() * x).sum().backward()
    >>> report = run_graph_checks(rec.graph())
    >>> report.passed, [r.check for r in report.results]
    (True, ['local', 'accumulation', 'kernel', 'order', 'nonfinite'])
    """
    _validate(checks, check_names("graph"))
    context = CheckContext(opts=local_options, node_progress=node_progress, client=client)
    results = []
    for k, name in enumerate(checks):
        if progress is not None:
            progress(name, k, len(checks))
        results.append(registry.spec(name)(graph, context))
    return Report(tuple(results))


def _validate(checks: Sequence[str], known: Sequence[str]) -> None:
    unknown = [c for c in checks if c not in known]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; choose from {', '.join(known)}")


def _float_outputs(out: Any) -> list[Any]:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, tpx.Tensor) and o.requires_grad]


def capture_call(
    fn: Callable[..., Any], inputs: Sequence[Any], *, seed: int = 0, where: str | None = None
) -> Graph:
    """Run ``fn(*inputs)`` and a backward from its outputs under :func:`record`.

    Scalar outputs are seeded with 1, others with a standard normal cotangent drawn from
    ``seed``; leaves are fresh copies, so the caller's tensors keep their ``.grad``. Nodes that
    ``fn`` records without a frame of user code (``fn`` is ``tp.sin`` itself) are attributed
    to ``where`` (default: where ``fn`` is defined), never to this module.

    >>> import tpx as tp
    >>> g = capture_call(lambda t: t.tanh(), [tp.ones(3, requires_grad=True)])
    >>> [n.name for n in g.nodes], len(g.backwards)
    (['AccumulateGrad', 'TanhBackward'], 1)
    """
    args = [fresh(x) for x in inputs]
    rng = np.random.default_rng(seed)
    rec = record()
    rec.where = where or location_of(fn)
    with rec:
        outs = _float_outputs(fn(*args))
        if outs:
            grads = [
                None if o.numel() == 1 else tpx.asarray(rng.standard_normal(o.shape), dtype=o.dtype)
                for o in outs
            ]
            tpx.backward(outs, grads)
    return rec.graphs[-1]  # NOTE: the backward run here (or the forward, when none ran)


def location_of(fn: Any) -> str:
    """``file:line in name`` where ``fn`` is defined, or ``<unknown>`` (a builtin).

    >>> location_of(location_of).endswith("in location_of")
    True
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{code.co_filename}:{code.co_firstlineno} in {code.co_name}"


def run_all_checks(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    checks: Sequence[str] = FUNCTION_CHECKS,
    seed: int = 0,
    local_options: LocalOptions | None = None,
    progress: Progress | None = None,
    where: str | None = None,
) -> Report:
    """Every check on ``fn(*inputs)``: whole-function gradcheck (float64, fast mode), the
    graph checks on one recorded forward and backward, tracing on vs off, and the plan of
    ``tpx.compile`` replayed against eager calls. ``where`` (default: where ``fn`` is
    defined) locates findings that no user frame recorded.

    >>> import tpx as tp
    >>> x = tp.asarray([[0.5, -1.0], [2.0, 0.3]], requires_grad=True)
    >>> report = run_all_checks(lambda a: (a @ a).tanh().sum(), [x])
    >>> report.passed, report.exit_code, len(report.results)
    (True, 0, 8)
    """
    _validate(checks, check_names())
    where = where or location_of(fn)
    context = CheckContext(opts=local_options, seed=seed, where=where)
    graph: Graph | None = None
    results: list[CheckResult] = []
    for name in sorted(checks, key=_report_rank):
        if progress is not None:
            progress(name, len(results), len(checks))
        spec = registry.spec(name)
        if spec.subject == "graph":
            graph = graph or capture_call(fn, inputs, seed=seed, where=where)
            results.append(spec(graph, context))
        else:
            results.append(spec(fn, context, inputs))
    return Report(tuple(results))


def _report_rank(name: str) -> int:
    """Where check ``name`` runs: graph checks together (one recording), in the order given."""
    spec = registry.spec(name)
    return min(s.rank for s in registry.checks("graph")) if spec.subject == "graph" else spec.rank


def run_script_checks(
    path: str,
    args: Sequence[str] = (),
    checks: Sequence[str] = GRAPH_CHECKS,
    *,
    max_backwards: int | None = 2,
    **options: Any,
) -> Report:
    """Run a script (as ``python path args``) under :func:`record`, then the graph checks.

    Only the first ``max_backwards`` backward passes (and the nodes recorded before their
    end) are kept and checked (None: all). A script that fails is reported as a ``script``
    check with its exit code.

    >>> import pathlib, tempfile
    >>> script = pathlib.Path(tempfile.mkdtemp()) / "s.py"
    >>> _ = script.write_text("import tpx as tp; tp.ones(2, requires_grad=True).sum().backward()")
    >>> run_script_checks(str(script)).exit_code
    0
    """
    from tpx_inspect.script import run_captured

    rec = record(max_backwards=max_backwards)
    outcome = run_captured(rec, path, list(args))
    graphs = rec.graphs
    if len(graphs) == 1:
        report = run_graph_checks(graphs[0], checks, **options)
    else:
        report = _merge([(g.id, run_graph_checks(g, checks, **options)) for g in graphs], checks)
    if outcome.ok:
        return report
    failed = Finding("script", f"{path} exited with code {outcome.exit_code}: {outcome.error}")
    return Report((CheckResult("script", 1, (failed,)), *report.results))


def run_trace_checks(
    trace: Any,
    checks: Sequence[str] = GRAPH_CHECKS,
    *,
    trust_code: bool = False,
    **options: Any,
) -> Report:
    """The graph checks on every graph of a saved trace (a path or a ``Trace``).

    Custom ``tp.Function`` nodes are checked with their classes only when ``trust_code``
    imports them (from the import paths the trace records: this runs user code); otherwise
    they take the verdicts recorded live by ``tpx-inspect run --check``, or are skipped with
    the reason. Results of several graphs are merged check by check; each finding names its
    graph in ``details['graph']``.

    >>> import tpx as tp, tpx_inspect
    >>> with tpx_inspect.capture(values="all", timing=False) as cap:
    ...     (tp.ones(2, requires_grad=True).tanh()).sum().backward()
    >>> run_trace_checks(cap.trace).result("local").checked
    2
    """
    from tpx_inspect.checks.functions import import_functions, live_verdicts, merge_live
    from tpx_inspect.checks.offline import with_functions
    from tpx_inspect.format import load

    if not isinstance(trace, Trace):
        trace = load(str(trace))
    functions = import_functions(trace.meta) if trust_code else {}
    reports = []
    for g in trace.graphs:
        report = run_graph_checks(with_functions(g, functions, trace.meta), checks, **options)
        reports.append((g.id, merge_live(report, live_verdicts(trace.meta, g.id), g)))
    return _merge(reports, checks)


def _merge(reports: list[tuple[int, Report]], checks: Sequence[str]) -> Report:
    merged = []
    for name in checks:
        parts = [(gid, r.result(name)) for gid, r in reports]
        findings = tuple(
            Finding(f.category, f"graph {gid}: {f.message}", f.node, f.op, f.name, f.scope,
                    f.source, f.severity, {**f.details, "graph": gid})
            for gid, p in parts for f in p.findings
        )  # fmt: skip
        merged.append(CheckResult(
            name, sum(p.checked for _, p in parts), findings, sum(p.skipped for _, p in parts),
            sum(p.seconds for _, p in parts), tuple(n for _, p in parts for n in p.notes),
            _merged_skips(parts),
        ))  # fmt: skip
    return Report(tuple(merged))


def _merged_skips(parts: list[tuple[int, CheckResult]]) -> tuple[Skip, ...]:
    """The skips of every graph; a whole-graph skip that not every graph shares is dropped
    when another graph checked something (it would otherwise read as the whole trace's)."""
    skips = tuple(s for _, p in parts for s in p.skips)
    if sum(p.checked for _, p in parts) == 0:
        return tuple(dict.fromkeys(skips))
    return tuple(s for s in skips if s.node is not None)
