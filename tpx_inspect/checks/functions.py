"""Custom ``tp.Function`` nodes in saved traces: where their class lives, and verdicts made live.

A trace names a Function's node by its op (the class name) only. While the recording process
still holds the classes, :func:`annotate_functions` writes each one's import path into the
trace's ``meta["functions"]`` and, with ``tpx-inspect run --check``, :func:`record_live_checks`
runs the local check with the live classes and writes every node's verdict into
``meta["live_checks"]``. Offline, the server never imports user code: it shows the live
verdicts (:func:`merge_live`); the CLI imports the classes only when asked (``--trust-code``,
:func:`import_functions`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from typing import Any

import p10
import tpx
from tpx import observe
from tpx_inspect.checks.local import local_check
from tpx_inspect.checks.offline import with_functions
from tpx_inspect.checks.report import CheckResult, Finding, Report, Skip


def live_function_classes() -> dict[str, type]:
    """Every ``tp.Function`` subclass defined in this process, by its op name.

    >>> import tpx as tp
    >>> class Twice(tp.Function):
    ...     @staticmethod
    ...     def forward(ctx, x): return x * 2
    ...     @staticmethod
    ...     def backward(ctx, g): return g * 2
    >>> live_function_classes()["Twice"] is Twice
    True
    """
    return observe.function_classes()


def function_info(cls: type) -> dict[str, Any]:
    """``{"path": "module:qualname", "file": source file or None, "importable": bool}``.

    A class defined inside a function (``<locals>`` in its qualname) cannot be imported.

    >>> function_info(tpx.Function)["importable"]
    True
    """
    # NOTE: the file of forward's code, not inspect.getsourcefile: a script's classes live in
    # a __main__ that is no longer the script's once the run ended.
    code = getattr(cls.__dict__.get("forward"), "__code__", None)
    if code is None:
        code = getattr(getattr(cls.__dict__.get("forward"), "__func__", None), "__code__", None)
    file = code.co_filename if code is not None else None
    return {
        "path": f"{cls.__module__}:{cls.__qualname__}",
        "file": file,
        "importable": "<locals>" not in cls.__qualname__,
    }


def _custom_ops(trace: Any) -> set[str]:
    names = set()
    for g in trace.graphs:
        for n in g.nodes:
            if n.op is not None and not _is_builtin(n.op):
                names.add(n.op)
    return names


def _is_builtin(name: str) -> bool:
    try:
        p10.op_from_name(name)
    except p10.P10Error:
        return False
    return True


def annotate_functions(trace: Any) -> dict[str, Any]:
    """Write the import path of every Function class the trace's nodes ran into
    ``trace.meta["functions"]`` (op name -> :func:`function_info`); returns that dict."""
    classes = live_function_classes()
    infos = {name: function_info(classes[name]) for name in sorted(_custom_ops(trace))
             if name in classes}  # fmt: skip
    if infos:
        trace.meta["functions"] = infos
    return infos


def import_functions(meta: Mapping[str, Any]) -> dict[str, type | str]:
    """Import the Function classes a trace names (CLI ``--trust-code`` only: this runs user
    code). Each op name maps to its class, or to the reason it could not be imported."""
    out: dict[str, type | str] = {}
    for name, info in (meta.get("functions") or {}).items():
        try:
            out[name] = _import(info)
        except Exception as e:  # NOTE: any error of the user's module is a reason, not a crash
            out[name] = f"tp.Function {name!r} ({info.get('path')}) could not be imported: {e}"
    return out


def _import(info: Mapping[str, Any]) -> type:
    module, _, qualname = str(info["path"]).partition(":")
    if not info.get("importable", True):
        raise ImportError("it is defined inside a function")
    file = info.get("file")
    if module == "__main__":  # NOTE: the recorded script: importable only from its file
        if not file:
            raise ImportError("it was defined in a script whose file is unknown")
        mod = _load_file(str(file))
    else:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            if not file:
                raise
            mod = _load_file(str(file))
    obj: Any = mod
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, tpx.Function)):
        raise TypeError(f"{info['path']} is not a tp.Function")
    return obj


def _load_file(path: str) -> Any:
    name = f"_tpx_inspect_trusted_{abs(hash(path))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module at {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def record_live_checks(trace: Any, classes: Mapping[str, type] | None = None) -> list[dict]:
    """Run the local check on every graph of ``trace`` with the live Function classes and
    write each node's verdict into ``trace.meta["live_checks"]``:
    ``[{"graph": id, "verdicts": [[node, status, message], ...]}]``."""
    classes = dict(live_function_classes() if classes is None else classes)
    out = []
    for g in trace.graphs:
        result = local_check(with_functions(g, classes))
        out.append({"graph": g.id, "verdicts": _verdicts(g, result)})
    trace.meta["live_checks"] = out
    return out


def _verdicts(graph: Any, result: CheckResult) -> list[list]:
    failed = {f.node: f.message for f in result.errors}
    skipped = {s.node: s.reason for s in result.skips}
    rows = []
    for n in graph.nodes:
        if n.kind in ("leaf", "param"):
            continue
        if n.id in failed:
            rows.append([n.id, "fail", failed[n.id]])
        elif n.id in skipped:
            rows.append([n.id, "skipped", skipped[n.id]])
        else:
            rows.append([n.id, "pass", ""])
    return rows


def live_verdicts(meta: Mapping[str, Any], graph_id: int) -> list[tuple[int, str, str]]:
    """The live local-check verdicts recorded for graph ``graph_id``: ``(node, status,
    message)``; empty when the run was not recorded with ``--check``."""
    for entry in meta.get("live_checks") or ():
        if entry.get("graph") == graph_id:
            return [(int(n), str(s), str(m)) for n, s, m in entry.get("verdicts", ())]
    return []


def merge_live(report: Report, verdicts: list[tuple[int, str, str]], graph: Any) -> Report:
    """``report`` with the live verdicts filling in the local check's Function nodes that it
    skipped offline: a live failure becomes a finding, a live pass a checked node."""
    if not verdicts:
        return report
    results = []
    for r in report.results:
        results.append(_merge_local(r, verdicts, graph) if r.check == "local" else r)
    return Report(tuple(results), report.strict)


def _merge_local(r: CheckResult, verdicts: list, graph: Any) -> CheckResult:
    by_node = {n: (s, m) for n, s, m in verdicts}
    keep, findings, checked = [], list(r.findings), r.checked
    for s in r.skips:
        live = by_node.get(s.node) if s.reason.startswith("tp.Function") else None
        if live is None or live[0] == "skipped":
            keep.append(s if live is None else Skip(f"live: {live[1]}", s.node))
            continue
        checked += 1
        if live[0] == "fail":
            findings.append(_live_finding(graph, s.node, live[1]))
    return CheckResult(r.check, checked, tuple(findings), len(keep), r.seconds, r.notes,
                       tuple(keep))  # fmt: skip


def _live_finding(graph: Any, node_id: int, message: str) -> Finding:
    n = graph.node(node_id)
    return Finding(
        "rule", f"(live check when the run was recorded) {message}", node=node_id, op=n.op,
        name=n.name, scope=n.scope, source=str(n.source) if n.source is not None else "",
        details={"live": True},
    )  # fmt: skip
