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
import math
import os
import zipfile
from functools import cache
from typing import Any

import numpy as np

from tpx_inspect import _check_arrays as _arrays
from tpx_inspect._safe_read import LoadLimits, read_npz, read_regular, sidecar_file
from tpx_inspect._schema import Rule, compile_schema, quote
from tpx_inspect._util import paused_gc, replace_file
from tpx_inspect._version import FORMAT_VERSION, check_version, version_fields, warn_ignored
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.records import (
    NODE_FIELDS,
    SUMMARY_COLUMNS,
    ErrorInfo,
    Graph,
    GraphTables,
    NodeTable,
    Run,
    Trace,
    ValueStore,
)
from tpx_inspect.summary import PREVIEW
from tpx_inspect.tables import OPTIONAL_NODE_FIELDS

FORMAT = "tpx_inspect.trace"
VERSION = FORMAT_VERSION[0]
SUPPORTED_VERSIONS = (VERSION,)
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
def to_json(trace: Trace, *, inline: bool = False) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON document of ``trace`` and the arrays of its sidecar (pure, deterministic).

    With ``inline`` the arrays go into the document itself (``"arrays"``; for small exports
    that must be one file) and the returned dict is empty.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> doc, arrays = to_json(tpx_inspect.trace(lambda: x.exp().sum().backward()))
    >>> doc["runs"][0]["graphs"][0]["rows"]["nodes"], sorted(arrays)[:2]
    ([0, 3], ['r0.accumulations', 'r0.consts'])
    """
    arrays: dict[str, np.ndarray] = {}
    kept = _KeptValues(trace)
    runs = [_run_json(r, arrays, kept) for r in trace.runs]
    _values_arrays(kept.values, arrays)
    doc: dict[str, Any] = {"format": FORMAT, **version_fields(), "meta": trace.meta, "runs": runs}
    if trace.plans:
        doc["plans"] = [dict(p) for p in trace.plans]
    if inline:
        doc["sidecar"] = None
        doc["arrays"] = {k: _inline(a) for k, a in sorted(arrays.items())}
        return doc, {}
    return doc, arrays


def save(
    trace: Trace, path: str, *, sidecar: str | None = None, compress: bool = True
) -> tuple[str, str]:
    """Write ``trace`` to ``path`` (JSON) and its ``.npz`` sidecar; returns both paths.

    ``sidecar`` names the sidecar file (in the JSON's folder) when it is not ``path``'s own
    (``run.json`` -> ``run.npz``): a checkpoint writes a sidecar that the JSON it replaces
    does not read. Each file is replaced whole, the JSON last, so a process killed at any
    moment leaves the previous trace or the new one, never half of one. ``compress=False``
    stores the sidecar's members uncompressed (three times faster, for checkpoints).
    """
    with paused_gc():
        return _save(trace, path, sidecar, compress)


def _save(trace: Trace, path: str, sidecar: str | None, compress: bool) -> tuple[str, str]:
    doc, arrays = to_json(trace)
    side = sidecar_path(path) if sidecar is None else os.path.join(os.path.dirname(path), sidecar)
    blob = _npz_bytes(arrays, compress)
    doc["sidecar"] = {
        "file": os.path.basename(side),
        "bytes": len(blob),
        "sha256": hashlib.sha256(blob).hexdigest(),
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    replace_file(side, blob)
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    replace_file(path, (text + "\n").encode("utf-8"))
    return path, side


def _npz_bytes(arrays: dict[str, np.ndarray], compress: bool = True) -> bytes:
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method, compresslevel=1) as z:
        for key in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", _ZIP_DATE)
            info.compress_type = method
            z.writestr(info, member.getvalue(), compresslevel=1)
    return buf.getvalue()


def _inline(a: np.ndarray) -> dict[str, Any]:
    data = a.reshape(-1).tolist()
    if a.dtype.kind == "f":
        data = [v if v - v == 0 else str(v) for v in data]
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": data}


_TABLES = ("summaries", "previews", "nodes", "times", "grads_out", "consts", "accumulations")


def _run_json(run: Run, arrays: dict, kept: _KeptValues) -> dict[str, Any]:
    structures: dict[int, Graph] = {}
    for g in run.graphs:
        structures.setdefault(g.structure, g)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in _TABLES}
    sizes = dict.fromkeys(_TABLES, 0)
    graphs = []
    for g in run.graphs:
        graphs.append(_graph_json(g, parts, sizes, kept.remap(g.values)))
    for k in _TABLES:
        arrays[f"r{run.id}.{k}"] = _concat(parts[k], k)
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
            _structure_json(sid, g) for sid, g in sorted(structures.items())
        ],
        "graphs": graphs,
    }  # fmt: skip


_EMPTY = {
    "summaries": (0, len(SUMMARY_COLUMNS)), "previews": (0, PREVIEW), "nodes": (0, 4),
    "times": (0, 2), "grads_out": (0,), "consts": (0,), "accumulations": (0, 4),
}  # fmt: skip


def _concat(parts: list[np.ndarray], key: str) -> np.ndarray:
    if not parts:
        kind = np.float64 if key in ("summaries", "previews", "times") else np.int64
        return np.zeros(_EMPTY[key], kind)
    return np.concatenate(parts)


class _KeptValues:
    """The values the graphs of a trace refer to, renumbered 0..k-1 (in their capture order)
    (a trace holding one graph of a long capture saves only that graph's values)."""

    def __init__(self, trace: Trace) -> None:
        self.values: list[np.ndarray] = []
        self._maps: dict[int, np.ndarray] = {}
        used: dict[int, tuple[ValueStore, list[np.ndarray]]] = {}
        for g in trace.graphs:
            ids = g.tables.summaries[:, 8]
            used.setdefault(id(g.values), (g.values, []))[1].append(ids[ids >= 0])
        for key, (store, parts) in used.items():
            ids = np.unique(np.concatenate(parts)).astype(np.int64)
            remap = np.full(len(store), -1, np.int64)
            remap[ids] = np.arange(len(self.values), len(self.values) + len(ids))
            self._maps[key] = remap
            self.values.extend(store.get(int(i)) for i in ids)

    def remap(self, store: ValueStore) -> np.ndarray:
        """Old value id -> new value id for the graphs of ``store``."""
        return self._maps[id(store)]


def _structure_json(sid: int, g: Graph) -> dict[str, Any]:
    nodes = g.nodes
    table = nodes if isinstance(nodes, NodeTable) else NodeTable.from_nodes(nodes)
    sources: dict[tuple, int] = {}
    refs = []
    for src in table.columns["source"]:
        refs.append(None if src is None else sources.setdefault(tuple(src), len(sources)))
    return {
        "id": sid,
        "roots": list(g.roots),
        "sources": [list(k) for k in sources],
        "nodes": {**table.columns, "source": refs},
    }


def _graph_json(g: Graph, parts: dict, sizes: dict, remap: np.ndarray) -> dict[str, Any]:
    t = g.tables
    rows = {}
    for k in _TABLES:
        a = getattr(t, k)
        if k == "summaries" and len(a):
            a = a.copy()
            ids = a[:, 8].astype(np.int64)
            kept = remap[np.maximum(ids, 0)] if len(remap) else -1  # values="none": no ids
            a[:, 8] = np.where(ids >= 0, kept, -1)
        parts[k].append(a)
        rows[k] = [sizes[k], sizes[k] + len(a)]
        sizes[k] += len(a)
    return {
        "id": g.id,
        "step": g.step,
        "kind": g.kind,
        "structure": g.structure,
        "detail": g.detail,
        "peak_saved_bytes": g.peak_saved_bytes,
        "backward_seconds": g.backward_seconds,
        "rows": rows,
    }


def _values_arrays(values: list[np.ndarray], arrays: dict) -> None:
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
def load(path: str, *, limits: LoadLimits | None = None) -> Trace:
    """Read a trace written by :func:`save`, validating all of it first (the JSON against the
    schema, every array's dtype, shape and row references, the sizes against ``limits``).

    Raises only :class:`TraceFormatError`, whose message names the file and the field and
    quotes little of the input: for a corrupt/truncated file, an unknown version, a
    missing/mismatched sidecar, or a sidecar that is not a regular file in the trace's folder.

    >>> load("no/such/trace.json")
    Traceback (most recent call last):
    ...
    tpx_inspect.errors.TraceFormatError: no/such/trace.json: no such trace file
    """
    limits = limits if limits is not None else LoadLimits.from_env()
    with paused_gc():
        return from_json(_read_json(path, limits), path, limits=limits)


def from_json(
    doc: dict[str, Any], path: str = "<trace>", *, limits: LoadLimits | None = None
) -> Trace:
    """The trace of a JSON document (its sidecar read next to ``path``, or inline arrays)."""
    minor = _check_header(doc, path)
    problem = _schema_rule().check(doc)
    if problem is not None:
        raise TraceFormatError(f"{path}: {problem}")
    limits = limits if limits is not None else LoadLimits.from_env()
    if isinstance(doc.get("arrays"), dict):
        arrays = _read_inline(doc["arrays"], path)
    else:
        arrays = _read_sidecar(path, doc, limits)
    store = _load_values(arrays, path)
    runs, ignored = [], set()
    for i, r in enumerate(_get(doc, "runs", list, path)):
        try:
            runs.append(_load_run(r, arrays, store, ignored))
        except TraceFormatError as e:
            raise TraceFormatError(f"{path}: runs[{i}]: {e}") from None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as e:
            raise TraceFormatError(
                f"{path}: run {i} is malformed: {type(e).__name__}: {quote(str(e), 100)}"
            ) from None
    warn_ignored(path, minor, ignored)
    return Trace(doc["version"], tuple(runs), doc.get("meta") or {}, _load_plans(doc, path))


def _load_plans(doc: dict, path: str) -> tuple[dict[str, Any], ...]:
    """The optional ``plans`` of tpx.compile (absent in older traces)."""
    plans = doc.get("plans")
    if plans is None:
        return ()
    required = ("buffers", "kernels", "peak_bytes")
    if not isinstance(plans, list) or not all(
        isinstance(p, dict) and all(k in p for k in required) for p in plans
    ):
        raise TraceFormatError(
            f"{path}: 'plans' must be a list of objects with {', '.join(required)}"
        )
    return tuple(plans)


@cache
def _schema_rule() -> Rule:
    with open(schema_path(), encoding="utf-8") as f:
        return compile_schema(json.load(f))


def _strict_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"the number {quote(text, 30)} is out of range")
    return v


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not valid JSON (strict JSON has no NaN or Infinity)")


def _read_json(path: str, limits: LoadLimits) -> dict[str, Any]:
    blob = read_regular(path, limits.max_json_bytes)
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"{path}: not a trace (not UTF-8 text at byte {e.start})") from None
    try:
        doc = json.loads(text, parse_constant=_no_constant, parse_float=_strict_float)
    except json.JSONDecodeError as e:
        # NOTE: a complete document ends with its closing brace; a cut-off one does not
        what = "corrupt" if text.rstrip().endswith("}") else "truncated"
        raise TraceFormatError(f"{path}: {what} trace JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise TraceFormatError(f"{path}: corrupt trace JSON (nested too deeply)") from None
    except ValueError as e:  # a constant, an out-of-range float or an integer too long
        raise TraceFormatError(f"{path}: corrupt trace JSON ({quote(str(e), 120)})") from None
    _check_surrogates(text, doc, path)
    return doc


def _check_surrogates(text: str, doc: Any, path: str) -> None:
    # NOTE: json.loads accepts "\ud800" alone; such a string cannot be encoded to UTF-8 later
    # (an HTTP answer, a terminal). Escaped surrogates are rare: only then is the document
    # re-encoded to find a lone one.
    if "\\ud" not in text.lower():
        return
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise TraceFormatError(
            f"{path}: corrupt trace JSON (a string holds a lone surrogate)"
        ) from None


def _check_header(doc: Any, path: str) -> int:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TraceFormatError(f"{path}: not a tpx_inspect trace (no 'format': '{FORMAT}')")
    return check_version(doc, path)


def _read_sidecar(path: str, doc: dict, limits: LoadLimits) -> dict[str, np.ndarray]:
    info = doc.get("sidecar")
    if not isinstance(info, dict):
        raise TraceFormatError(f"{path}: sidecar: null, but the trace has no inline 'arrays'")
    side = sidecar_file(path, info["file"])
    if not os.path.lexists(side):
        raise TraceFormatError(
            f"{path}: its sidecar {side} is missing; keep the .npz next to the .json"
        )
    if info["bytes"] > limits.max_sidecar_bytes:
        raise TraceFormatError(f"{path}: sidecar.bytes: {info['bytes']} is more than the limit "
                               f"{limits.max_sidecar_bytes}")  # fmt: skip
    blob = read_regular(side, limits.max_sidecar_bytes, "sidecar")
    if len(blob) != info["bytes"] or hashlib.sha256(blob).hexdigest() != info["sha256"]:
        raise TraceFormatError(
            f"{side}: the sidecar does not match its trace ({len(blob)} bytes, expected "
            f"{info['bytes']}; truncated, corrupt or from another capture)"
        )
    return read_npz(blob, side, limits)


def _read_inline(arrays: dict, path: str) -> dict[str, np.ndarray]:
    out = {}
    for k, a in arrays.items():
        try:
            dtype = np.dtype(a["dtype"])
            if dtype.kind not in "fiubU" or dtype.fields or dtype.itemsize > 1024:
                raise ValueError(f"dtype {dtype} is not allowed")
            data = a["data"]
            if len(data) != math.prod(a["shape"]):
                raise ValueError(f"{len(data)} elements for the shape {a['shape']}")
            if dtype.kind == "f":
                data = [float(v) if isinstance(v, str) else v for v in data]
            elif any(isinstance(v, str) for v in data) and dtype.kind != "U":
                raise ValueError("a string in a numeric array")
            out[k] = np.array(data, dtype).reshape(a["shape"])
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise TraceFormatError(
                f"{path}: arrays[{quote(k, 40)}] is malformed ({quote(str(e), 80)})"
            ) from None
    return out


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
    except TypeError:
        raise TraceFormatError(f"{path}: array 'values.dtypes' is not a list") from None
    if any(b.ndim != 1 for b in bufs):
        raise TraceFormatError(f"{path}: a values buffer is not 1-D")
    try:
        value_shapes = _arrays.value_shapes(index, shapes, [len(b) for b in bufs])
    except TraceFormatError as e:
        raise TraceFormatError(f"{path}: {e}") from None
    out = []
    for (code, off, size, _), shape in zip(index.tolist(), value_shapes):
        a = bufs[code][off : off + size].reshape(shape)
        a.flags.writeable = False
        out.append(a)
    return ValueStore(out)


def _load_run(r: dict, arrays: dict, store: ValueStore, ignored: set[str]) -> Run:
    rid = r["id"]
    structures = {}
    for s in r["structures"]:
        structures[s["id"]] = (_load_nodes(s["nodes"], s["sources"], ignored), tuple(s["roots"]))
    tables = {}
    for k in _TABLES:
        key = f"r{rid}.{k}"
        if key not in arrays:
            raise TraceFormatError(f"the sidecar lacks array {key!r}")
        _arrays.check_table(key, arrays[key])
        tables[k] = arrays[key]
    _arrays.check_summaries(f"r{rid}.summaries", tables["summaries"], len(store))
    checked: dict = {}  # NOTE: 100,000 graphs of one structure share their checks
    graphs = tuple(_load_graph(rid, g, structures, tables, store, checked) for g in r["graphs"])
    e = r.get("error")
    err = None if e is None else ErrorInfo(e["type"], e["message"], e["traceback"])
    return Run(rid, r["name"], r["status"], r["steps"], r["policy"], graphs, err)


_ALL_NODE_FIELDS = {*NODE_FIELDS, *OPTIONAL_NODE_FIELDS}


def _load_nodes(cols: dict[str, list[Any]], sources: list[list], ignored: set[str]) -> NodeTable:
    n = len(cols["kind"])
    # NOTE: columns this version does not know (a newer minor version) are dropped and named
    # in a warning; the optional ones (OPTIONAL_NODE_FIELDS) may be absent (older traces)
    ignored.update(f"node column {f!r}" for f in cols if f not in _ALL_NODE_FIELDS)
    cols = {f: v for f, v in cols.items() if f in _ALL_NODE_FIELDS}
    for f in cols:
        if not isinstance(cols[f], list) or len(cols[f]) != n:
            raise TraceFormatError(f"node column {f!r} is not a list of {n} entries")
    try:
        cols = {**cols, "source": [None if k is None else sources[k] for k in cols["source"]]}
    except (IndexError, TypeError):
        raise TraceFormatError("a node's source is not an index into 'sources'") from None
    for i, ins in enumerate(cols["inputs"]):
        for e in ins:
            src = e[0]
            if src is not None and not (type(src) is int and 0 <= src < i):
                raise TraceFormatError(f"node {i}: input {src!r} breaks topological order")
    return NodeTable(cols)


def _load_graph(
    rid: int, g: dict, structures: dict, tables: dict, store: ValueStore, checked: dict
) -> Graph:
    gid = g["id"]
    if g["structure"] not in structures:
        raise TraceFormatError(f"graph {gid}: unknown structure {g['structure']}")
    nodes, roots = structures[g["structure"]]
    rows = g["rows"]
    key = (g["structure"], g["detail"], *map(tuple, map(rows.__getitem__, _TABLES)))
    t = checked.get(key)  # NOTE: graphs with the same rows share one checked table set
    if t is None:
        if any(not 0 <= r < len(nodes) for r in roots):
            raise TraceFormatError(f"structure {g['structure']}: a root is not one of its nodes")
        parts = {}
        for k in _TABLES:
            lo, hi = rows[k]
            if not 0 <= lo <= hi <= len(tables[k]):
                raise TraceFormatError(f"graph {gid}: rows {lo}:{hi} of {k!r} are out of range")
            parts[k] = tables[k][lo:hi]
        t = checked[key] = GraphTables(**parts)
        _check_tables(gid, t, nodes, g["detail"])
    return Graph(
        gid, rid, g["step"], g["kind"], g["structure"], g["detail"], nodes, roots, t,
        g["peak_saved_bytes"], g["backward_seconds"], store,
    )  # fmt: skip


def _check_tables(gid: int, t: GraphTables, nodes: NodeTable, detail: str) -> None:
    edges = sum(nodes.input_counts())
    _arrays.check_graph_tables(gid, t, len(nodes), edges, detail)
