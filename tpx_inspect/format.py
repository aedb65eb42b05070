"""Save and load traces: a JSON document plus an ``.npz`` sidecar (no pickle, ever).

The JSON is versioned and described by ``tpx_inspect/schema/trace.schema.json``. Compact
positional arrays are used where a trace has one entry per node (edges, summaries) so that a
100,000-node graph saves and loads in under half a second each (with orjson installed; see
``_json``). Loading lives in ``_trace_load``; :func:`read_header` reads what a trace says
about itself (version, runs, graphs, node counts) without its node columns or sidecar
(``_trace_header``); the sidecar is written by ``_sidecar_write``. Output is deterministic: the
same trace gives the same bytes (the sidecar's zip entries carry a fixed timestamp).
"""

from __future__ import annotations

import os
from itertools import chain
from operator import eq
from typing import Any, NamedTuple

import numpy as np

from tpx_inspect import _json
from tpx_inspect._node_runs import RUN_FIELDS, to_runs
from tpx_inspect._sidecar_previews import DERIVED, drop_derivable
from tpx_inspect._sidecar_write import SidecarWrite, packed_arrays, values_arrays
from tpx_inspect._trace_header import GraphHeader, RunHeader, TraceHeader, read_header
from tpx_inspect._trace_load import (
    FORMAT,
    SUPPORTED_VERSIONS,
    TABLES,
    VERSION,
    from_json,
    load,
    schema_path,
    sidecar_path,
)
from tpx_inspect._util import paused_gc, replace_file
from tpx_inspect._version import version_fields
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.records import (
    SUMMARY_COLUMNS,
    Graph,
    NodeTable,
    Run,
    Trace,
    ValueStore,
)
from tpx_inspect.summary import PREVIEW
from tpx_inspect.tables import PackedValues

__all__ = [
    "FORMAT", "SUPPORTED_VERSIONS", "VERSION", "GraphHeader", "RunHeader", "TraceHeader",
    "from_json", "load", "read_header", "save", "schema_path", "sidecar_path", "to_json",
]  # fmt: skip


# -- saving -------------------------------------------------------------------------------------
def to_json(
    trace: Trace, *, inline: bool = False, version: int = VERSION
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON document of ``trace`` and the arrays of its sidecar (pure, deterministic).

    With ``inline`` the arrays go into the document itself (``"arrays"``; for small exports
    that must be one file) and the returned dict is empty. ``version=1`` writes the format
    of tpx_inspect before version 2 (one entry per node in every node column), which older
    readers load.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> doc, arrays = to_json(tpx_inspect.trace(lambda: x.exp().sum().backward()))
    >>> doc["runs"][0]["graphs"][0]["rows"]["nodes"], sorted(arrays)[:2]
    ([0, 3], ['r0.accumulations', 'r0.consts'])
    """
    arrays, tables = _sidecar_arrays(trace, version)
    doc = _document(trace, version, tables)
    if inline:
        doc["sidecar"] = None
        doc["arrays"] = {k: _inline(a) for k, a in sorted(arrays.items())}
        return doc, {}
    return doc, arrays


class _RunTables(NamedTuple):
    """What a run's sidecar arrays gave its JSON: its graphs (row ranges) and whether its
    previews of kept values are derived (format 2.1)."""

    graphs: list[dict[str, Any]]
    derived: bool


def _sidecar_arrays(
    trace: Trace, version: int, writer: SidecarWrite | None = None
) -> tuple[dict[str, np.ndarray], list[_RunTables]]:
    """The sidecar's arrays of ``trace`` and what each run's JSON takes from them; the node
    columns' JSON (:func:`_document`) can be made after, while the sidecar is written. Given
    a ``writer``, the arrays go to it as they are made: first the run tables but their
    previews, then the kept values' arrays, then the previews (:func:`_give`)."""
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"cannot write trace format version {version!r}: it is one of "
                         f"{', '.join(map(str, SUPPORTED_VERSIONS))}")  # fmt: skip
    arrays: dict[str, np.ndarray] = {}
    kept = _KeptValues(trace)
    graphs = [_run_tables(r, arrays, kept) for r in trace.runs]
    given: set[str] = set()
    _give(writer, arrays, given)  # NOTE: written while the values' arrays are made
    packed = kept.packed()
    if packed is None or not packed_arrays(packed, arrays):
        values_arrays(kept.values, arrays)
    _give(writer, arrays, given)  # NOTE: written while the previews are compared
    # NOTE: format 2.1: the previews of kept values made at load (not in version 1)
    derive = [
        version == VERSION and drop_derivable(r.id, g, arrays) for r, g in zip(trace.runs, graphs)
    ]
    _give(writer, arrays, given, last=True)
    return arrays, [_RunTables(g, d) for g, d in zip(graphs, derive)]


def _give(
    writer: SidecarWrite | None, arrays: dict[str, np.ndarray], given: set[str], last: bool = False
) -> None:
    """Give ``writer`` the arrays made since the last call (their previews only when
    ``last``: whether those are stored is known once the values are)."""
    if writer is None:
        return
    new = {
        k: a for k, a in arrays.items() if k not in given and (last or not k.endswith(".previews"))
    }
    given.update(new)
    writer.add(new, last=last)


def _document(trace: Trace, version: int, tables: list[_RunTables]) -> dict[str, Any]:
    runs = [_run_json(r, t, version) for r, t in zip(trace.runs, tables)]
    head = {"version": version}
    if version == VERSION:  # NOTE: 2.1 only when a run derives its previews, else 2.0
        head = version_fields(1 if any(t.derived for t in tables) else 0)
    doc: dict[str, Any] = {"format": FORMAT, **head, "meta": trace.meta, "runs": runs}
    if trace.plans:
        doc["plans"] = [dict(p) for p in trace.plans]
    return doc


def save(
    trace: Trace,
    path: str,
    *,
    sidecar: str | None = None,
    compress: bool | None = None,
    version: int = VERSION,
) -> tuple[str, str]:
    """Write ``trace`` to ``path`` (JSON) and its ``.npz`` sidecar; returns both paths.

    ``sidecar`` names the sidecar file (in the JSON's folder) when it is not ``path``'s own
    (``run.json`` -> ``run.npz``): a checkpoint writes a sidecar that the JSON it replaces
    does not read. Each file is replaced whole, the JSON last, so a process killed at any
    moment leaves the previous trace or the new one, never half of one.

    ``compress`` chooses how the sidecar's members are written (any choice is a plain
    ``.npz``, read by ``numpy.load``): by default (None) a member is deflated when it
    deflates very well and so fast (statistics of one or two distinct values, the value
    shapes) and stored when it does not (kept float values, most int tables: deflating them
    costs more than hashing, writing and reading their bytes); ``True`` deflates every
    member (the smallest file, the slowest save);
    ``False`` stores every member (the fastest, for checkpoints). Stored members are written
    from the arrays themselves, aligned, and loaded as views of the file's bytes.
    ``version=1`` writes the older format (see :func:`to_json`).
    """
    if trace.meta.get("values") == "raw":
        # NOTE: a "raw" capture keeps values without statistics; saved, its summaries would
        # read as zero NaN/Inf counts, a verdict nobody computed
        raise TraceFormatError(
            f"cannot save {path}: this trace was captured with values='raw' (values for the "
            "live checks, no statistics), so its NaN/Inf counts were never computed; capture "
            "with values='all' (or 'small') to save it"
        )
    with paused_gc():
        return _save(trace, path, sidecar, compress, version)


def _save(
    trace: Trace, path: str, sidecar: str | None, compress: bool | None, version: int = VERSION
) -> tuple[str, str]:
    side = sidecar_path(path) if sidecar is None else os.path.join(os.path.dirname(path), sidecar)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    writer = SidecarWrite(side, compress)
    try:
        _, tables = _sidecar_arrays(trace, version, writer)
    except BaseException:
        writer.abandon()
        raise
    try:  # NOTE: the JSON is made while the sidecar is packed, hashed and written
        doc = _document(trace, version, tables)
        doc["sidecar"] = {"file": os.path.basename(side), "bytes": 0, "sha256": _UNKNOWN}
        text = _json.dumps(doc)
    finally:
        info = writer.result()
    doc["sidecar"].update(info)
    replace_file(path, _with_sidecar(text, doc))  # NOTE: last: it names the sidecar now there
    return path, side


_UNKNOWN = "0" * 64


def _with_sidecar(text: bytes, doc: dict[str, Any]) -> bytes:
    """The JSON of ``doc``, from ``text``, its JSON made while the sidecar's size and hash
    were not known: ``"sidecar"`` is the document's last key and ``"sha256"`` its own, so
    only the end of ``text`` changes."""
    info = doc["sidecar"]
    tail = f'"bytes":0,"sha256":"{_UNKNOWN}"}}}}\n'.encode()
    if not text.endswith(tail):
        return _json.dumps(doc)  # NOTE: never expected; the whole document again
    return (
        text[: -len(tail)] + f'"bytes":{info["bytes"]},"sha256":"{info["sha256"]}"}}}}\n'.encode()
    )


def _inline(a: np.ndarray) -> dict[str, Any]:
    data = a.reshape(-1).tolist()
    if a.dtype.kind == "f":
        data = [v if v - v == 0 else str(v) for v in data]
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": data}


def _run_tables(run: Run, arrays: dict, kept: _KeptValues) -> list[dict[str, Any]]:
    """The run's tables into ``arrays``; the JSON of its graphs."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in TABLES}
    sizes = dict.fromkeys(TABLES, 0)
    graphs = [_graph_json(g, parts, sizes, kept.remap(g.values)) for g in run.graphs]
    for k in TABLES:
        arrays[f"r{run.id}.{k}"] = _concat(parts[k], k)
    return graphs


def _run_json(run: Run, tables: _RunTables, version: int) -> dict[str, Any]:
    structures: dict[int, Graph] = {}
    for g in run.graphs:
        structures.setdefault(g.structure, g)
    err = run.error
    out = {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "steps": run.steps,
        "policy": run.policy,
        "error": None if err is None else {"type": err.type, "message": err.message,
                                          "traceback": err.traceback},
        "structures": [
            _structure_json(sid, g, version) for sid, g in sorted(structures.items())
        ],
        "graphs": tables.graphs,
    }  # fmt: skip
    if tables.derived:
        out[DERIVED] = True
    return out


_EMPTY = {
    "summaries": (0, len(SUMMARY_COLUMNS)), "previews": (0, PREVIEW), "nodes": (0, 4),
    "times": (0, 2), "grads_out": (0,), "consts": (0,), "accumulations": (0, 4),
}  # fmt: skip


def _concat(parts: list[np.ndarray], key: str) -> np.ndarray:
    if not parts:
        kind = np.float64 if key in ("summaries", "previews", "times") else np.int64
        return np.zeros(_EMPTY[key], kind)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)  # NOTE: one graph: no copy


class _KeptValues:
    """The values the graphs of a trace refer to, renumbered 0..k-1 (in their capture order)
    (a trace holding one graph of a long capture saves only that graph's values)."""

    def __init__(self, trace: Trace) -> None:
        self._kept: list[tuple[ValueStore, np.ndarray]] = []
        self._maps: dict[int, np.ndarray] = {}
        used: dict[int, tuple[ValueStore, list[np.ndarray]]] = {}
        for g in trace.graphs:
            ids = g.tables.summaries[:, 8]
            used.setdefault(id(g.values), (g.values, []))[1].append(ids[ids >= 0])
        count = 0
        for key, (store, parts) in used.items():
            ids = np.concatenate(parts).astype(np.int64)
            if not (ids[1:] > ids[:-1]).all():  # NOTE: a whole capture's are already in order
                ids = np.unique(ids)
            remap = np.full(len(store), -1, np.int64)
            remap[ids] = np.arange(count, count + len(ids))
            self._maps[key] = remap
            self._kept.append((store, ids))
            count += len(ids)

    @property
    def values(self) -> list[np.ndarray]:
        """The kept values in their new order."""
        parts: list[list[np.ndarray]] = []
        for store, ids in self._kept:
            if isinstance(store, PackedValues) or len(ids) < len(store) // 4:
                parts.append(list(map(store.get, ids.tolist())))  # NOTE: loaded: a view each
                continue
            every = list(store)  # NOTE: one C pass; store.get costs ~0.5 us a value in Python
            parts.append(
                every if len(ids) == len(every) else list(map(every.__getitem__, ids.tolist()))
            )
        # NOTE: one store (a capture's): its list as it is (each pass over 300,000 values
        # touches 300,000 objects: ~10 ms)
        return parts[0] if len(parts) == 1 else list(chain.from_iterable(parts))

    def packed(self) -> PackedValues | None:
        """The one loaded store of the trace when every one of its values is kept (then in
        their order): a loaded trace saved again."""
        if len(self._kept) != 1:
            return None
        store, ids = self._kept[0]
        whole = isinstance(store, PackedValues) and 0 < len(ids) == len(store)
        return store if whole else None  # NOTE: ids are unique, sorted, below len(store)

    def remap(self, store: ValueStore) -> np.ndarray:
        """Old value id -> new value id for the graphs of ``store``."""
        return self._maps[id(store)]


def _structure_json(sid: int, g: Graph, version: int) -> dict[str, Any]:
    nodes = g.nodes
    table = nodes if isinstance(nodes, NodeTable) else NodeTable.from_nodes(nodes)
    # NOTE: a column may be a list or a NumPy array of its entries (tolist: the same objects)
    columns = {f: c.tolist() if isinstance(c, np.ndarray) else c for f, c in table.columns.items()}
    sources: dict[tuple, int] = {}
    if version < 2:
        out = {**columns, "source": _source_refs(columns["source"], sources)}
    else:  # NOTE: the columns that repeat, as runs (_node_runs); sources numbered per run
        out = {**columns, **{f: to_runs(columns[f]) for f in RUN_FIELDS}}
        runs = out["source"]
        out["source"] = _joined(_source_refs(runs["values"], sources), runs["counts"])
    return {"id": sid, "roots": list(g.roots), "sources": [list(k) for k in sources],
            "nodes": out}  # fmt: skip


def _source_refs(column: list, sources: dict[tuple, int]) -> list[int | None]:
    """Each entry's number among the distinct source lines (numbered into ``sources`` in
    order of first use; None stays None)."""
    # NOTE: nodes of one code location share one source object: each distinct object is
    # looked at once, in order of first use (C-speed passes, no Python loop over the nodes)
    objects = dict(zip(map(id, column), column))
    index = {k: None if s is None else sources.setdefault(tuple(s), len(sources))
             for k, s in objects.items()}  # fmt: skip
    return list(map(index.__getitem__, map(id, column)))


def _joined(values: list, counts: list[int]) -> dict[str, list]:
    """The runs ``values`` x ``counts`` with neighbours of equal values joined (two source
    objects of the same line: a loaded trace's)."""
    if not any(map(eq, values[1:], values)):
        return {"values": values, "counts": counts}
    out: dict[str, list] = {"values": [], "counts": []}
    for v, c in zip(values, counts):
        if out["values"] and out["values"][-1] == v:
            out["counts"][-1] += c
        else:
            out["values"].append(v)
            out["counts"].append(c)
    return out


def _graph_json(g: Graph, parts: dict, sizes: dict, remap: np.ndarray) -> dict[str, Any]:
    t = g.tables
    rows = {}
    for k in TABLES:
        a = getattr(t, k)
        if k == "summaries" and len(a) and not (a[:, 8] == -1).all():  # NOTE: -1: no value
            a = _renumbered(a, remap)
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


def _renumbered(summaries: np.ndarray, remap: np.ndarray) -> np.ndarray:
    """``summaries`` with their value ids (column 8) renumbered by ``remap``: the table itself
    when no id changes (a whole capture saved), else a column-major copy (the order it is
    written in: no second copy)."""
    ids = summaries[:, 8].astype(np.int64)
    kept = remap[np.maximum(ids, 0)] if len(remap) else -1  # NOTE: values="none": no ids
    new = np.where(ids >= 0, kept, -1)
    if np.array_equal(new, summaries[:, 8]):
        return summaries
    out = np.array(summaries, order="F")
    out[:, 8] = new
    return out
