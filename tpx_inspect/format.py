"""Save and load traces: a JSON document plus an ``.npz`` sidecar (no pickle, ever).

The JSON is versioned and described by ``tpx_inspect/schema/trace.schema.json``. Compact
positional arrays are used where a trace has one entry per node (edges, summaries) so that a
100,000-node graph saves and loads in under half a second each (with orjson installed; see
``_json``). Loading lives in ``_trace_load``; :func:`read_header` reads what a trace says
about itself (version, runs, graphs, node counts) without its node columns or sidecar
(``_trace_header``). Output is deterministic: the
same trace gives the same bytes (the sidecar's zip entries carry a fixed timestamp).
"""

from __future__ import annotations

import hashlib
import io
import os
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from tpx_inspect import _json
from tpx_inspect._node_runs import RUN_FIELDS, to_runs
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
from tpx_inspect._zip_write import zip_bytes
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
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"cannot write trace format version {version!r}: it is one of "
                         f"{', '.join(map(str, SUPPORTED_VERSIONS))}")  # fmt: skip
    arrays: dict[str, np.ndarray] = {}
    kept = _KeptValues(trace)
    runs = [_run_json(r, arrays, kept, version) for r in trace.runs]
    packed = kept.packed()
    if packed is None or not _packed_arrays(packed, arrays):
        _values_arrays(kept.values, arrays)
    head = version_fields() if version == VERSION else {"version": version}
    doc: dict[str, Any] = {"format": FORMAT, **head, "meta": trace.meta, "runs": runs}
    if trace.plans:
        doc["plans"] = [dict(p) for p in trace.plans]
    if inline:
        doc["sidecar"] = None
        doc["arrays"] = {k: _inline(a) for k, a in sorted(arrays.items())}
        return doc, {}
    return doc, arrays


def save(
    trace: Trace,
    path: str,
    *,
    sidecar: str | None = None,
    compress: bool = True,
    version: int = VERSION,
) -> tuple[str, str]:
    """Write ``trace`` to ``path`` (JSON) and its ``.npz`` sidecar; returns both paths.

    ``sidecar`` names the sidecar file (in the JSON's folder) when it is not ``path``'s own
    (``run.json`` -> ``run.npz``): a checkpoint writes a sidecar that the JSON it replaces
    does not read. Each file is replaced whole, the JSON last, so a process killed at any
    moment leaves the previous trace or the new one, never half of one. ``compress=False``
    stores the sidecar's members uncompressed (three times faster, for checkpoints).
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
    trace: Trace, path: str, sidecar: str | None, compress: bool, version: int = VERSION
) -> tuple[str, str]:
    doc, arrays = to_json(trace, version=version)
    side = sidecar_path(path) if sidecar is None else os.path.join(os.path.dirname(path), sidecar)
    blob = _npz_bytes(arrays, compress)
    doc["sidecar"] = {
        "file": os.path.basename(side),
        "bytes": len(blob),
        "sha256": hashlib.sha256(blob).hexdigest(),
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    replace_file(side, blob)
    replace_file(path, _json.dumps(doc))
    return path, side


def _npz_bytes(arrays: dict[str, np.ndarray], compress: bool = True) -> bytes:
    """The ``.npz`` of ``arrays`` (members in sorted order; deflated on threads at once)."""
    members = (
        (k + ".npy", _npy_bytes(arrays[k], fortran=k.endswith(_BY_COLUMN))) for k in sorted(arrays)
    )
    return zip_bytes(members, compress)


_BY_COLUMN = (".summaries", ".previews")
"""Tables stored column-major (``fortran_order`` in the ``.npy`` header, which ``np.load`` and
the loader honour): a column often holds few distinct values (the 24 + 14 MB of the
100,000-node benchmark chain deflate to 0.2 MB instead of 2 MB and inflate 30% faster), and
the loaded table's columns (what the checks and views read) are contiguous."""


def _npy_bytes(a: np.ndarray, fortran: bool = False) -> bytes | bytearray:
    """The ``.npy`` file of ``a``, as ``np.save`` writes it, in one copy (no file object);
    with ``fortran``, a 2-D ``a`` (of more than one row and column) is written column-major."""
    assert not a.dtype.hasobject, a.dtype  # NOTE: trace arrays hold numbers and short strings
    by_column = fortran and a.ndim == 2 and min(a.shape) > 1
    if not by_column:
        a = np.ascontiguousarray(a)
        return b"".join((_npy_header(a.dtype, a.shape, False), a.reshape(-1).view(np.uint8)))
    head = _npy_header(a.dtype, a.shape, True)
    out = bytearray(len(head) + a.nbytes)
    out[: len(head)] = head
    # NOTE: the column-major bytes of a are the row-major bytes of a.T: copied once, in place
    np.frombuffer(out, a.dtype, offset=len(head)).reshape(a.shape[::-1])[...] = a.T
    return out


def _npy_header(dtype: np.dtype, shape: tuple[int, ...], fortran: bool) -> bytes:
    head = io.BytesIO()
    descr = np.lib.format.dtype_to_descr(dtype)
    np.lib.format.write_array_header_1_0(
        head, {"descr": descr, "fortran_order": fortran, "shape": shape}
    )
    return head.getvalue()


def _inline(a: np.ndarray) -> dict[str, Any]:
    data = a.reshape(-1).tolist()
    if a.dtype.kind == "f":
        data = [v if v - v == 0 else str(v) for v in data]
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": data}


def _run_json(run: Run, arrays: dict, kept: _KeptValues, version: int) -> dict[str, Any]:
    structures: dict[int, Graph] = {}
    for g in run.graphs:
        structures.setdefault(g.structure, g)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in TABLES}
    sizes = dict.fromkeys(TABLES, 0)
    graphs = []
    for g in run.graphs:
        graphs.append(_graph_json(g, parts, sizes, kept.remap(g.values)))
    for k in TABLES:
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
            _structure_json(sid, g, version) for sid, g in sorted(structures.items())
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
            ids = np.unique(np.concatenate(parts)).astype(np.int64)
            remap = np.full(len(store), -1, np.int64)
            remap[ids] = np.arange(count, count + len(ids))
            self._maps[key] = remap
            self._kept.append((store, ids))
            count += len(ids)

    @property
    def values(self) -> list[np.ndarray]:
        """The kept values in their new order."""
        return [v for store, ids in self._kept for v in map(store.get, ids.tolist())]

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
    column = columns["source"]
    # NOTE: nodes of one code location share one source object: each distinct object is
    # looked at once, in order of first use (C-speed passes, no Python loop over the nodes)
    objects = dict(zip(map(id, column), column))
    sources: dict[tuple, int] = {}
    index = {k: None if s is None else sources.setdefault(tuple(s), len(sources))
             for k, s in objects.items()}  # fmt: skip
    refs = list(map(index.__getitem__, map(id, column)))
    nodes = {**columns, "source": refs}
    if version >= 2:  # NOTE: the columns that repeat, as runs (_node_runs)
        nodes.update({f: to_runs(nodes[f]) for f in RUN_FIELDS})
    return {"id": sid, "roots": list(g.roots), "sources": [list(k) for k in sources],
            "nodes": nodes}  # fmt: skip


def _graph_json(g: Graph, parts: dict, sizes: dict, remap: np.ndarray) -> dict[str, Any]:
    t = g.tables
    rows = {}
    for k in TABLES:
        a = getattr(t, k)
        if k == "summaries" and len(a) and not (a[:, 8] == -1).all():  # NOTE: -1: no value
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
    # NOTE: ~300,000 small values at 100k nodes: C-speed passes over the list (map,
    # attrgetter) and NumPy over the columns, no Python loop over the values
    n = len(values)
    kinds = list(map(_DTYPE, values))
    dtypes = sorted({d.str for d in set(kinds)})
    code_of = {d: dtypes.index(d.str) for d in set(kinds)}
    if len(dtypes) == 1:
        codes = np.zeros(n, np.int64)
    else:
        codes = np.fromiter(map(code_of.__getitem__, kinds), np.int64, n)
    sizes = np.fromiter(map(_SIZE, values), np.int64, n)
    offsets = np.zeros(n, np.int64)
    for c in range(len(dtypes)):  # NOTE: each value's place in its dtype's buffer
        mine = codes == c
        offsets[mine] = np.cumsum(sizes[mine]) - sizes[mine]
    ndims = np.fromiter(map(_NDIM, values), np.int64, n)
    arrays["values.index"] = np.stack([codes, offsets, sizes, ndims], axis=1)
    shapes = np.fromiter(chain.from_iterable(map(_SHAPE, values)), np.int64)
    arrays["values.shapes"] = shapes
    arrays["values.dtypes"] = np.asarray(dtypes, dtype="U8") if dtypes else np.zeros(0, "U8")
    for c, d in enumerate(dtypes):
        mine = values if len(dtypes) == 1 else [values[i] for i in np.flatnonzero(codes == c)]
        arrays[f"values.{c}"] = _flat_concat(mine, np.dtype(d))


def _packed_arrays(store: PackedValues, arrays: dict) -> bool:
    """The ``values.*`` arrays of a loaded store taken as they were loaded, when they are what
    :func:`_values_arrays` would write for its values (all kept, in order): no view made, no
    buffer joined (300,000 values of a ``values="small"`` trace). False: they are not."""
    bufs, index, shapes = store.packed()
    dtypes = [b.dtype.str for b in bufs]
    if dtypes != sorted(set(dtypes)) or index.dtype != np.int64 or shapes.dtype != np.int64:
        return False
    codes, offsets, sizes, ndims = index.T
    if int(ndims.sum()) != len(shapes):
        return False
    for c, buf in enumerate(bufs):  # NOTE: each dtype's values one after another, all used
        mine = codes == c
        if int(sizes[mine].sum()) != len(buf) or not mine.any():
            return False
        if not np.array_equal(offsets[mine], np.cumsum(sizes[mine]) - sizes[mine]):
            return False
    arrays["values.index"] = index
    arrays["values.shapes"] = shapes
    arrays["values.dtypes"] = np.asarray(dtypes, dtype="U8")
    arrays.update((f"values.{c}", buf) for c, buf in enumerate(bufs))
    return True


def _flat_concat(values: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """``np.concatenate(values, axis=None)`` of ``values`` of one ``dtype``, 4x faster for
    many small C-contiguous values: their buffers joined as bytes (a value that is not
    C-contiguous refuses to give its bytes: then NumPy concatenates)."""
    try:
        return np.frombuffer(b"".join(values), dtype)
    except TypeError:
        return np.concatenate(values, axis=None)


_DTYPE, _SIZE, _NDIM, _SHAPE = map(attrgetter, ("dtype", "size", "ndim", "shape"))
