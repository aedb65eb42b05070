"""Loading traces written by :mod:`tpx_inspect.format`: the JSON validated against its schema,
the ``.npz`` sidecar read without trusting it (see ``_safe_read``), every table checked before a
record is built. Also the names both sides share: the format name, its versions, the tables.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

from tpx_inspect import _check_arrays as _arrays
from tpx_inspect import _json
from tpx_inspect._node_runs import RUN_FIELDS, from_runs
from tpx_inspect._safe_read import LoadLimits, read_regular
from tpx_inspect._schema import Rule, compile_schema, quote
from tpx_inspect._sidecar_previews import DERIVED, expand
from tpx_inspect._sidecar_read import Prefetch, SidecarRead, read_inline, read_sidecar
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
    # NOTE: the usual sidecar is read and hashed on a thread while the JSON is parsed
    prefetch = Prefetch(path, sidecar_path(path), limits)
    with paused_gc(promote=True):
        return _from_json(_read_json(path, limits), path, limits, early=prefetch)


def from_json(
    doc: dict[str, Any], path: str = "<trace>", *, limits: LoadLimits | None = None
) -> Trace:
    """The trace of a JSON document (its sidecar read next to ``path``, or inline arrays)."""
    limits = limits if limits is not None else LoadLimits.from_env()
    return _from_json(doc, path, limits, early=None)


def _from_json(doc: Any, path: str, limits: LoadLimits, early: Prefetch | None) -> Trace:
    """``early``: the sidecar is read on a thread while the schema check runs, with the bytes
    prefetched while the JSON was parsed."""
    side = SidecarRead(path, doc, limits, early) if early and _has_sidecar(doc) else None
    try:
        minor = check_document(doc, path)
        if isinstance(doc.get("arrays"), dict):
            arrays = read_inline(doc["arrays"], path)
        else:
            arrays = side.result() if side is not None else read_sidecar(path, doc, limits)
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


def _has_sidecar(doc: Any) -> bool:
    return type(doc) is dict and doc.get("format") == FORMAT and type(doc.get("arrays")) is not dict


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
    derived = r.get(DERIVED, False)  # NOTE: format 2.1: previews made from the kept values
    for k in TABLES:
        key = f"r{rid}.{k}"
        if derived and k == "previews":
            continue
        if key not in arrays:
            raise TraceFormatError(f"the sidecar lacks array {key!r}")
        _arrays.check_table(key, arrays[key])
        tables[k] = arrays[key]
    _arrays.check_summaries(f"r{rid}.summaries", tables["summaries"], len(store))
    if derived:
        tables["previews"] = expand(r, arrays)  # NOTE: the values were checked (_load_values)
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
    if major >= 2:
        return _load_nodes_2(cols, sources)
    n = len(cols["kind"])
    for f in cols:
        if not isinstance(cols[f], list) or len(cols[f]) != n:
            raise TraceFormatError(f"node column {f!r} is not a list of {n} entries")
    cols["source"] = _sources(cols["source"], sources)
    _check_order(cols["inputs"])
    return NodeTable(cols)


def _load_nodes_2(cols: dict[str, Any], sources: list[list]) -> NodeTable:
    """Format 2: the node count is the length of ``inputs``; the run columns are checked
    against it before they are expanded (``_node_runs``)."""
    n = len(cols["inputs"])
    for f in [f for f in cols if f not in RUN_FIELDS]:
        if not isinstance(cols[f], list) or len(cols[f]) != n:
            raise TraceFormatError(f"node column {f!r} is not a list of {n} entries")
    # NOTE: each run's source looked up once, then the runs expanded
    cols["source"] = {**cols["source"], "values": _sources(cols["source"]["values"], sources)}
    cols.update({f: from_runs(cols[f]["values"], cols[f]["counts"], n, f) for f in RUN_FIELDS})
    _check_order(cols["inputs"])
    return NodeTable(cols)


def _sources(refs: list, sources: list[list]) -> list:
    """The source lines that ``refs`` (indices into ``sources``, or null) stand for."""
    lookup = {None: None, **dict(enumerate(sources))}
    try:  # NOTE: the schema let through only null and ints >= 0 (no True, which equals 1)
        return list(map(lookup.__getitem__, refs))
    except (KeyError, TypeError):
        raise TraceFormatError("a node's source is not an index into 'sources'") from None


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
