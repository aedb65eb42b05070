"""Loading traces written by :mod:`tpx_inspect.format`: the JSON validated against its schema,
the ``.npz`` sidecar read without trusting it (see ``_safe_read``), every table checked before a
record is built. Also the names both sides share: the format name, its versions, the tables.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from functools import cache
from typing import Any

import numpy as np

from tpx_inspect import _check_arrays as _arrays
from tpx_inspect import _json
from tpx_inspect._node_runs import RUN_FIELDS, from_runs
from tpx_inspect._safe_read import LoadLimits, read_npz, read_regular, sidecar_file
from tpx_inspect._schema import Rule, compile_schema, quote
from tpx_inspect._util import paused_gc
from tpx_inspect._value_index import load_values as _load_values
from tpx_inspect._version import FORMAT_VERSION, READS, check_version, warn_ignored
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.records import (
    NODE_FIELDS,
    ErrorInfo,
    Graph,
    GraphTables,
    NodeTable,
    Run,
    Trace,
    ValueStore,
)
from tpx_inspect.tables import OPTIONAL_NODE_FIELDS

FORMAT = "tpx_inspect.trace"
VERSION = FORMAT_VERSION[0]
SUPPORTED_VERSIONS = tuple(READS)
TABLES = ("summaries", "previews", "nodes", "times", "grads_out", "consts", "accumulations")
"""The per-run tables of the sidecar (``r<run>.<table>``), in the order graphs list them."""


def schema_path(version: int = VERSION) -> str:
    """Path of the JSON Schema that describes the trace JSON of format ``version`` (a major
    version this tpx_inspect reads; version 1's schema is kept as it was).

    >>> os.path.basename(schema_path()), os.path.basename(schema_path(1))
    ('trace.schema.json', 'trace-v1.schema.json')
    """
    name = "trace.schema.json" if version == VERSION else f"trace-v{version}.schema.json"
    return os.path.join(os.path.dirname(__file__), "schema", name)


def sidecar_path(path: str) -> str:
    """The sidecar of a trace path: ``run.json`` -> ``run.npz``.

    >>> sidecar_path("out/run.json")
    'out/run.npz'
    """
    stem = path[: -len(".json")] if path.endswith(".json") else path
    return stem + ".npz"


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
    with paused_gc(promote=True):
        return _from_json(_read_json(path, limits), path, limits, early=True)


def from_json(
    doc: dict[str, Any], path: str = "<trace>", *, limits: LoadLimits | None = None
) -> Trace:
    """The trace of a JSON document (its sidecar read next to ``path``, or inline arrays)."""
    limits = limits if limits is not None else LoadLimits.from_env()
    return _from_json(doc, path, limits, early=False)


def _from_json(doc: Any, path: str, limits: LoadLimits, early: bool) -> Trace:
    """``early``: the sidecar is read on a thread while the schema check runs."""
    side = _SidecarRead(path, doc, limits) if early and _has_sidecar(doc) else None
    try:
        minor = check_document(doc, path)
        if isinstance(doc.get("arrays"), dict):
            arrays = _read_inline(doc["arrays"], path)
        else:
            arrays = side.result() if side is not None else _read_sidecar(path, doc, limits)
    finally:
        if side is not None:
            side.cancel()
    store = _load_values(arrays, path)
    runs, ignored, major = [], set(), doc["version"]
    for i, r in enumerate(_get(doc, "runs", list, path)):
        try:
            runs.append(_load_run(r, arrays, store, ignored, major))
        except TraceFormatError as e:
            raise TraceFormatError(f"{path}: runs[{i}]: {e}") from None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as e:
            raise TraceFormatError(
                f"{path}: run {i} is malformed: {type(e).__name__}: {quote(str(e), 100)}"
            ) from None
    warn_ignored(path, major, minor, ignored)
    return Trace(major, tuple(runs), doc.get("meta") or {}, _load_plans(doc, path))


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
def _schema_rule(version: int = VERSION) -> Rule:
    with open(schema_path(version), encoding="utf-8") as f:
        return compile_schema(json.load(f))


def check_document(doc: Any, path: str) -> int:
    """Check a parsed trace document: its format, its version (the minor one is returned) and
    the schema; raises :class:`TraceFormatError` naming ``path`` and the bad field."""
    minor = _check_header(doc, path)
    problem = _schema_rule(doc["version"]).check(doc)
    if problem is not None:
        raise TraceFormatError(f"{path}: {problem}")
    return minor


def _read_json(path: str, limits: LoadLimits) -> dict[str, Any]:
    return parse_json(read_regular(path, limits.max_json_bytes), path)


def parse_json(blob: bytes, path: str) -> Any:
    """The document of the trace JSON ``blob`` (strict JSON); :class:`TraceFormatError` saying
    where it is corrupt or cut off."""
    fast = _json.fast_loads(blob)
    if fast is not _json.REFUSED:  # NOTE: orjson refuses what the checks below refuse
        return fast
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"{path}: not a trace (not UTF-8 text at byte {e.start})") from None
    try:
        doc = json.loads(text, parse_constant=_json.no_constant, parse_float=_json.strict_float)
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
    return read_npz(*sidecar_bytes(path, doc, limits), limits)


def sidecar_bytes(path: str, doc: dict, limits: LoadLimits) -> tuple[bytes, str]:
    """The bytes of the sidecar of the trace ``path`` (document ``doc``) and its path, checked
    against the size and SHA-256 the document records; :class:`TraceFormatError` if missing,
    too big or not the one the trace was saved with."""
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
    return blob, side


def _has_sidecar(doc: Any) -> bool:
    return type(doc) is dict and doc.get("format") == FORMAT and type(doc.get("arrays")) is not dict


class _SidecarRead:
    """The sidecar of a trace read, hashed and unpacked on a thread while the main thread
    checks the document against the schema: zlib, SHA-256 and CRC-32 release the GIL, so on a
    second core the sidecar costs no wall time. The thread runs the same function as a plain
    read (``_read_sidecar``) on the not yet checked document; its answer (arrays, or the
    TraceFormatError) is used only once the document passed the schema, where a plain read
    would have started, so the errors and their order are those of a plain read. Anything
    else it raised (a field of the wrong type, which the schema refuses first) is forgotten,
    and the sidecar read again on the caller's thread."""

    def __init__(self, path: str, doc: dict, limits: LoadLimits) -> None:
        self._args = (path, doc, limits)
        self._stop = threading.Event()
        self._out: tuple[bool, Any] | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._run, name="tpx_inspect sidecar", daemon=True
        )
        try:
            self._thread.start()
        except RuntimeError:  # NOTE: no thread to be had (a process at its limit): read later
            self._thread = None

    def _run(self) -> None:
        try:
            blob, side = sidecar_bytes(*self._args)
            if not self._stop.is_set():  # NOTE: the document was refused: nothing to unpack
                self._out = (True, read_npz(blob, side, self._args[2]))
        except TraceFormatError as e:
            self._out = (False, e)
        except BaseException:  # NOTE: see the class docstring: read again if needed
            self._out = None

    def result(self) -> dict[str, np.ndarray]:
        """The arrays, or the TraceFormatError a plain read raises."""
        if self._thread is not None:
            self._thread.join()
        if self._out is None:
            return _read_sidecar(*self._args)
        ok, value = self._out
        if ok:
            return value
        raise value

    def cancel(self) -> None:
        """Stop before unpacking (when the document was refused) and wait for the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


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


def _load_run(r: dict, arrays: dict, store: ValueStore, ignored: set[str], major: int) -> Run:
    rid = r["id"]
    structures = {}
    for s in r["structures"]:
        nodes = _load_nodes(s["nodes"], s["sources"], ignored, major)
        structures[s["id"]] = (nodes, tuple(s["roots"]))
    tables = {}
    for k in TABLES:
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


def _load_nodes(
    cols: dict[str, Any], sources: list[list], ignored: set[str], major: int
) -> NodeTable:
    # NOTE: columns this version does not know (a newer minor version) are dropped and named
    # in a warning; the optional ones (OPTIONAL_NODE_FIELDS) may be absent (older traces)
    ignored.update(f"node column {f!r}" for f in cols if f not in _ALL_NODE_FIELDS)
    cols = {f: v for f, v in cols.items() if f in _ALL_NODE_FIELDS}
    runs = RUN_FIELDS if major >= 2 else ()  # NOTE: version 1: every column one entry a node
    n = len(cols["inputs"] if runs else cols["kind"])
    for f in cols:
        if f not in runs and (not isinstance(cols[f], list) or len(cols[f]) != n):
            raise TraceFormatError(f"node column {f!r} is not a list of {n} entries")
    lookup = {None: None, **dict(enumerate(sources))}
    source = cols["source"]["values"] if runs else cols["source"]
    try:  # NOTE: the schema let through only null and ints >= 0 (no True, which equals 1)
        source = list(map(lookup.__getitem__, source))
    except (KeyError, TypeError):
        raise TraceFormatError("a node's source is not an index into 'sources'") from None
    if runs:  # NOTE: each run's value looked up once, then the runs expanded
        cols["source"] = {**cols["source"], "values": source}
        expanded = {f: from_runs(cols[f]["values"], cols[f]["counts"], n, f) for f in runs}
        cols.update(expanded)
    else:
        cols["source"] = source
    _check_order(cols["inputs"])
    return NodeTable(cols)


def _check_order(inputs: list[list[list]]) -> None:
    """Every input id is smaller than its user's id (the schema checked the edges: 3 items, the
    first null or an integer >= 0)."""
    for i, edges in enumerate(inputs):
        for src, _, _ in edges:  # NOTE: unpacked: twice as fast as e[0]
            if src is not None and src >= i:
                raise TraceFormatError(f"node {i}: input {src!r} breaks topological order")


def _load_graph(
    rid: int, g: dict, structures: dict, tables: dict, store: ValueStore, checked: dict
) -> Graph:
    gid = g["id"]
    if g["structure"] not in structures:
        raise TraceFormatError(f"graph {gid}: unknown structure {g['structure']}")
    nodes, roots = structures[g["structure"]]
    rows = g["rows"]
    key = (g["structure"], g["detail"], *map(tuple, map(rows.__getitem__, TABLES)))
    t = checked.get(key)  # NOTE: graphs with the same rows share one checked table set
    if t is None:
        if any(not 0 <= r < len(nodes) for r in roots):
            raise TraceFormatError(f"structure {g['structure']}: a root is not one of its nodes")
        parts = {}
        for k in TABLES:
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
    edges = sum(map(len, nodes.columns["inputs"]))
    _arrays.check_graph_tables(gid, t, len(nodes), edges, detail)
