"""Save and load traces: a JSON document plus an ``.npz`` sidecar (no pickle, ever).

The JSON is versioned and described by ``tpx_inspect/schema/trace.schema.json``. Compact
positional arrays are used where a trace has one entry per node (edges, summaries) so that a
100,000-node graph saves and loads in well under two seconds. Output is deterministic: the
same trace gives the same bytes (the sidecar's zip entries carry a fixed timestamp).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from typing import Any

import numpy as np

from tpx_inspect.errors import TraceFormatError
from tpx_inspect.records import (
    Accumulation,
    Edge,
    ErrorInfo,
    Graph,
    Node,
    NodeStats,
    Run,
    Saved,
    Source,
    StatsTable,
    Trace,
    ValueStore,
    stats_table,
)
from tpx_inspect.summary import TensorSummary

FORMAT = "tpx_inspect.trace"
VERSION = 1
SUPPORTED_VERSIONS = (1,)
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def schema_path() -> str:
    """Path of the JSON Schema that describes the trace JSON.

    >>> os.path.basename(schema_path())
    'trace.schema.json'
    """
    return os.path.join(os.path.dirname(__file__), "schema", "trace.schema.json")


def sidecar_path(path: str) -> str:
    """The sidecar of a trace path: ``run.json`` -> ``run.npz``.

    >>> sidecar_path("out/run.json")
    'out/run.npz'
    """
    stem = path[: -len(".json")] if path.endswith(".json") else path
    return stem + ".npz"


# -- saving -------------------------------------------------------------------------------------
def to_json(trace: Trace) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON document of ``trace`` and the arrays of its sidecar (pure, deterministic)."""
    arrays: dict[str, np.ndarray] = {}
    stores: list[ValueStore] = []
    runs = [_run_json(r, arrays, stores) for r in trace.runs]
    _values_arrays(stores, arrays)
    doc = {"format": FORMAT, "version": VERSION, "meta": trace.meta, "runs": runs}
    return doc, arrays


def save(trace: Trace, path: str) -> tuple[str, str]:
    """Write ``trace`` to ``path`` (JSON) and its ``.npz`` sidecar; returns both paths."""
    doc, arrays = to_json(trace)
    side = sidecar_path(path)
    blob = _npz_bytes(arrays)
    doc["sidecar"] = {
        "file": os.path.basename(side),
        "bytes": len(blob),
        "sha256": hashlib.sha256(blob).hexdigest(),
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(side, "wb") as f:
        f.write(blob)
    text = json.dumps(doc, indent=None, separators=(",", ":"), allow_nan=False)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.write("\n")
    return path, side


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for key in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            z.writestr(zipfile.ZipInfo(key + ".npy", _ZIP_DATE), member.getvalue())
    return buf.getvalue()


def _run_json(run: Run, arrays: dict, stores: list) -> dict[str, Any]:
    structures: dict[int, Graph] = {}
    for g in run.graphs:
        structures.setdefault(g.structure, g)
    graphs = [_graph_json(g, arrays, _store_base(g.values, stores)) for g in run.graphs]
    err = run.error
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "steps": run.steps,
        "policy": run.policy,
        "error": None if err is None else {"type": err.type, "message": err.message,
                                          "traceback": err.traceback},
        "structures": [
            {"id": sid, "roots": list(g.roots), "nodes": [_node_json(n) for n in g.nodes]}
            for sid, g in sorted(structures.items())
        ],
        "graphs": graphs,
    }  # fmt: skip


def _store_base(store: ValueStore, stores: list) -> int:
    base = 0
    for s in stores:
        if s is store:
            return base
        base += len(s)
    stores.append(store)
    return base


def _node_json(n: Node) -> dict[str, Any]:
    src = n.source
    return {
        "id": n.id,
        "kind": n.kind,
        "op": n.op,
        "name": n.name,
        "label": n.label,
        "params": n.params,
        "scope": n.scope,
        "source": None if src is None else [src.file, src.line, src.function],
        "inputs": [[e.src, list(e.shape), e.dtype] for e in n.inputs],
        "shape": list(n.shape),
        "dtype": n.dtype,
        "saved": [[s.slot, list(s.shape), s.dtype, s.bytes] for s in n.saved],
    }


def _graph_json(g: Graph, arrays: dict, base: int) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": g.id,
        "step": g.step,
        "kind": g.kind,
        "structure": g.structure,
        "detail": g.detail,
        "order": list(g.order),
        "peak_saved_bytes": g.peak_saved_bytes,
        "backward_seconds": g.backward_seconds,
    }
    if g.detail == "stats":
        key = f"stats.r{g.run}.g{g.id}"
        table = g.stats.table if isinstance(g.stats, StatsTable) else None
        arrays[key] = table if table is not None else stats_table(g.nodes, g.stats)
        doc["stats"] = key
        doc["accumulations"] = []
        return doc
    doc["stats"] = [_stats_json(s, base) for s in g.stats]
    doc["accumulations"] = [
        [a.target, a.source, _summary_json(a.contribution, base), _summary_json(a.total, base)]
        for a in g.accumulations
    ]
    return doc


def _stats_json(s: NodeStats, base: int) -> dict[str, Any]:
    return {
        "output": _summary_json(s.output, base),
        "grad": _summary_json(s.grad, base),
        "grads_out": [_summary_json(x, base) for x in s.grads_out],
        "consts": [_summary_json(x, base) for x in s.consts],
        "forward_seconds": s.forward_seconds,
        "backward_seconds": s.backward_seconds,
        "order": s.order,
        "released": s.released,
    }


def _summary_json(s: TensorSummary | None, base: int) -> list[Any] | None:
    if s is None:
        return None
    return [
        list(s.shape), s.dtype, s.min, s.max, s.mean, s.std, s.norm, s.nan, s.inf, s.zeros,
        [v if v - v == 0 else str(v) for v in s.preview],
        None if s.value is None else s.value + base,
    ]  # fmt: skip


def _values_arrays(stores: list[ValueStore], arrays: dict) -> None:
    values = [a for s in stores for a in s]
    dtypes = sorted({a.dtype.str for a in values})
    code = {d: i for i, d in enumerate(dtypes)}
    index = np.zeros((len(values), 4), np.int64)
    shapes: list[int] = []
    offsets = dict.fromkeys(dtypes, 0)
    chunks: dict[str, list[np.ndarray]] = {d: [] for d in dtypes}
    for i, a in enumerate(values):
        d = a.dtype.str
        index[i] = (code[d], offsets[d], a.size, a.ndim)
        offsets[d] += a.size
        shapes.extend(a.shape)
        chunks[d].append(a.reshape(-1))
    arrays["values.index"] = index
    arrays["values.shapes"] = np.asarray(shapes, np.int64)
    arrays["values.dtypes"] = np.asarray(dtypes, dtype="U8") if dtypes else np.zeros(0, "U8")
    for i, d in enumerate(dtypes):
        arrays[f"values.{i}"] = np.concatenate(chunks[d])


# -- loading ------------------------------------------------------------------------------------
def load(path: str) -> Trace:
    """Read a trace written by :func:`save`; raises :class:`TraceFormatError` with the reason
    for a corrupt/truncated file, an unknown version or a missing/mismatched sidecar."""
    doc = _read_json(path)
    arrays = _read_sidecar(path, doc)
    store = _load_values(arrays, path)
    runs = []
    for i, r in enumerate(_get(doc, "runs", list, path)):
        try:
            runs.append(_load_run(r, arrays, store))
        except TraceFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise TraceFormatError(f"{path}: run {i} is malformed: {type(e).__name__}: {e}") from e
    return Trace(doc["version"], tuple(runs), doc.get("meta") or {})


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise TraceFormatError(f"{path}: no such trace file") from None
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"{path}: not a trace (not UTF-8 text: {e})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        what = "truncated" if e.pos >= len(text.rstrip()) else "corrupt"
        raise TraceFormatError(f"{path}: {what} trace JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TraceFormatError(f"{path}: not a tpx_inspect trace (no 'format': '{FORMAT}')")
    version = doc.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise TraceFormatError(
            f"{path}: trace format version {version!r} is not supported by this tpx_inspect "
            f"(it reads versions {', '.join(map(str, SUPPORTED_VERSIONS))}); re-capture the "
            "trace or upgrade tpx_inspect"
        )
    return doc


def _read_sidecar(path: str, doc: dict) -> dict[str, np.ndarray]:
    info = _get(doc, "sidecar", dict, path)
    side = os.path.join(os.path.dirname(path), str(info.get("file")))
    try:
        with open(side, "rb") as f:
            blob = f.read()
    except FileNotFoundError:
        raise TraceFormatError(
            f"{path}: its sidecar {side} is missing; keep the .npz next to the .json"
        ) from None
    if len(blob) != info.get("bytes") or hashlib.sha256(blob).hexdigest() != info.get("sha256"):
        raise TraceFormatError(
            f"{side}: the sidecar does not match its trace ({len(blob)} bytes, expected "
            f"{info.get('bytes')}; truncated, corrupt or from another capture)"
        )
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise TraceFormatError(f"{side}: corrupt sidecar ({e})") from None


def _get(doc: dict, key: str, kind: type, path: str) -> Any:
    v = doc.get(key)
    if not isinstance(v, kind):
        raise TraceFormatError(f"{path}: '{key}' is missing or not a {kind.__name__}")
    return v


def _load_values(arrays: dict, path: str) -> ValueStore:
    try:
        index, shapes = arrays["values.index"], arrays["values.shapes"]
        bufs = [arrays[f"values.{i}"] for i in range(len(arrays["values.dtypes"]))]
    except KeyError as e:
        raise TraceFormatError(f"{path}: sidecar lacks array {e}") from None
    out = []
    pos = 0
    for code, off, size, ndim in index.tolist():
        shape = tuple(shapes[pos : pos + ndim].tolist())
        pos += ndim
        a = bufs[code][off : off + size].reshape(shape)
        a.flags.writeable = False
        out.append(a)
    return ValueStore(out)


def _load_run(r: dict, arrays: dict, store: ValueStore) -> Run:
    rid = r["id"]
    structures = {}
    for s in r["structures"]:
        nodes = tuple(_load_node(i, n) for i, n in enumerate(s["nodes"]))
        structures[s["id"]] = (nodes, tuple(s["roots"]))
    graphs = tuple(_load_graph(rid, g, structures, arrays, store) for g in r["graphs"])
    e = r.get("error")
    err = None if e is None else ErrorInfo(e["type"], e["message"], e["traceback"])
    return Run(rid, r["name"], r["status"], r["steps"], r["policy"], graphs, err)


def _load_node(i: int, n: dict) -> Node:
    if n["id"] != i:
        raise TraceFormatError(f"node ids must be 0..n-1 in order; found {n['id']} at {i}")
    inputs = tuple(Edge(src, tuple(shape), dtype) for src, shape, dtype in n["inputs"])
    for e in inputs:
        if e.src is not None and not 0 <= e.src < i:
            raise TraceFormatError(f"node {i}: input {e.src} breaks topological order")
    src = n["source"]
    return Node(
        i, n["kind"], n["op"], n["name"], n["label"], n["params"], n["scope"],
        None if src is None else Source(src[0], src[1], src[2]), inputs, tuple(n["shape"]),
        n["dtype"], tuple(Saved(s[0], tuple(s[1]), s[2], s[3]) for s in n["saved"]),
    )  # fmt: skip


def _load_graph(rid: int, g: dict, structures: dict, arrays: dict, store: ValueStore) -> Graph:
    nodes, roots = structures[g["structure"]]
    if g["detail"] == "stats":
        key = g["stats"]
        if key not in arrays:
            raise TraceFormatError(f"graph {g['id']}: sidecar lacks its stats table {key!r}")
        stats: Any = StatsTable(nodes, arrays[key])
        accs: tuple = ()
    else:
        stats = tuple(_load_stats(s) for s in g["stats"])
        if len(stats) != len(nodes):
            raise TraceFormatError(f"graph {g['id']}: {len(stats)} stats for {len(nodes)} nodes")
        accs = tuple(
            Accumulation(t, s, _load_summary(c), _load_summary(tot))
            for t, s, c, tot in g["accumulations"]
        )
    return Graph(
        g["id"], rid, g["step"], g["kind"], g["structure"], g["detail"], nodes, roots, stats,
        tuple(g["order"]), accs, g["peak_saved_bytes"], g["backward_seconds"], store,
    )  # fmt: skip


def _load_stats(s: dict) -> NodeStats:
    return NodeStats(
        _load_summary(s["output"]), _load_summary(s["grad"]),
        tuple(_load_summary(x) for x in s["grads_out"]),
        tuple(_load_summary(x) for x in s["consts"]),
        s["forward_seconds"], s["backward_seconds"], s["order"], s["released"],
    )  # fmt: skip


def _load_summary(s: list | None) -> TensorSummary | None:
    if s is None:
        return None
    shape, dtype, lo, hi, mean, std, norm, nan, inf, zeros, preview, value = s
    head = tuple(v if not isinstance(v, str) else float(v) for v in preview)
    return TensorSummary(tuple(shape), dtype, lo, hi, mean, std, norm, nan, inf, zeros, head, value)
