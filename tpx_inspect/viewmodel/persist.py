"""The view model kept beside its trace: ``trace.view.npz`` next to ``trace.json``.

Building the view model of a 100,000-node graph costs more than a second, and a fresh server
would pay it (after reading the whole trace) before its first frame. The sidecar keeps, per
graph, the group tree and the first screen's layout, so that the first frame needs the
sidecar alone and a later model needs only the trace's node columns.

The sidecar is trusted only when it names the trace's content (a digest of ``trace.json``,
which itself holds the sha256 of the arrays' ``.npz``) and this code's view-model version
(:data:`VERSION` and a digest of the modules that shape the view), so a changed trace or a
changed grouping rule rebuilds it and a stale grouping is never shown. Every entry is JSON in
an ``.npz`` (read without pickle; the zip's CRC catches a damaged file); whatever does not
read back, check out or match is ignored with a log line and rebuilt, never trusted. A server
writes it when it first builds a big graph's model; :func:`keep` writes it right after a save.

>>> import os, tempfile, tpx as tp, tpx_inspect
>>> from tpx_inspect.viewmodel import build
>>> x = tp.ones(2, requires_grad=True)
>>> path = os.path.join(tempfile.mkdtemp(), "trace.json")
>>> trace = tpx_inspect.trace(lambda: (x * 2).sum().backward())
>>> _ = tpx_inspect.save(trace, path)
>>> write(path, {0: build(trace.graphs[0])})
True
>>> restored = read(path, 0, trace.graphs[0])
>>> restored.groups == build(trace.graphs[0]).groups
True
>>> first_screen(path, 0)["boxes"][0]["id"]
'n0'
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tpx_inspect import _json
from tpx_inspect._util import paused_gc, replace_file
from tpx_inspect.viewmodel._columns import columns
from tpx_inspect.viewmodel._kept import Kept, owner_of
from tpx_inspect.viewmodel.tree import ROOT, Group, ViewModel

if TYPE_CHECKING:
    from tpx_inspect.records import Graph

__all__ = [
    "FORMAT", "MIN_NODES", "SAVE_NODES", "VERSION", "Kept", "code_version", "first_screen",
    "graph_list", "keep", "kept", "opened", "read", "write",
]  # fmt: skip

log = logging.getLogger("tpx_inspect.viewmodel")

FORMAT = "tpx-inspect-view"
VERSION = 1
"""Bump when the view model's output changes in a way the module digest would not see."""
MIN_NODES = 2_000
"""Graphs with fewer nodes are not kept: their model is built in tens of milliseconds."""
SAVE_NODES = 10_000
"""Graphs of at least this many nodes get their model kept by :func:`keep`."""
_SHAPING = ("tree.py", "repeats.py", "loops.py", "_columns.py", "layout.py", "layered.py",
            "wire.py", "persist.py", "_kept.py", "listing.py")  # fmt: skip
_SIDE = ".view.npz"
_MAX_ENTRY = 512 << 20  # NOTE: a zip entry claiming more than this is not read


def sidecar_path(trace_path: str | os.PathLike[str]) -> Path:
    """``trace.view.npz`` for ``trace.json``.

    >>> sidecar_path("runs/a/trace.json").name
    'trace.view.npz'
    """
    p = Path(trace_path)
    return p.with_name(p.stem + _SIDE)


_CODE: list[str] = []


def code_version() -> str:
    """:data:`VERSION` and a digest of the modules that shape the view model (any edit to
    them makes every sidecar written before it stale)."""
    if not _CODE:
        h = hashlib.blake2b(digest_size=8)
        here = Path(__file__).parent
        for name in _SHAPING:
            h.update((here / name).read_bytes())
        h.update((here.parent / "collapse.py").read_bytes())  # NOTE: shape_label
        _CODE.append(h.hexdigest())
    return f"{VERSION}:{_CODE[0]}"


_DIGESTS: dict[tuple, str] = {}
_DIGEST_LOCK = threading.Lock()


def trace_digest(trace_path: str | os.PathLike[str]) -> str:
    """A digest of the trace's JSON (which holds its arrays' sha256), kept per file stamp."""
    st = os.stat(trace_path)
    stamp = (os.fspath(trace_path), st.st_mtime_ns, st.st_size)
    with _DIGEST_LOCK:
        hit = _DIGESTS.get(stamp)
    if hit is None:
        h = hashlib.blake2b(digest_size=16)
        with open(trace_path, "rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
        hit = h.hexdigest()
        with _DIGEST_LOCK:
            _DIGESTS[stamp] = hit
    return hit


# -- writing ------------------------------------------------------------------------------------
def _tree_doc(vm: ViewModel) -> dict[str, Any]:
    rows = [[g.id, g.kind, g.label, g.title, g.parent, list(g.children), g.size, g.depth,
             g.scope, g.count, g.first] for g in vm.groups.values()]  # fmt: skip
    return {"nodes": len(vm.owner), "default_expanded": list(vm.default_expanded),
            "groups": rows}  # fmt: skip


def _first_doc(vm: ViewModel) -> dict[str, Any]:
    from tpx_inspect.viewmodel import wire
    from tpx_inspect.viewmodel.layout import layout

    expanded = tuple(sorted(set(vm.default_expanded) | {ROOT}))
    every = len(expanded) == len(vm.groups)
    return {"expanded": list(expanded), "expand_all": every,
            **wire.layout_json(layout(vm, expanded), None, 0.0)}  # fmt: skip


def _opened_entries(k: int, vm: ViewModel) -> dict[str, np.ndarray]:
    """The answers (JSON bytes, kept as they are sent) of the states that open one big
    repeat of the first screen (what ``layout.prepare`` arranges ahead), and their states."""
    from tpx_inspect.viewmodel import wire
    from tpx_inspect.viewmodel.layout import prepare, state

    first = state(vm.default_expanded)
    ready = vm.memo.get("ready") or prepare(vm)
    opened = [(key, arr) for key, arr in ready.items() if key != first]
    index = {"states": [list(key) for key, _ in opened]}
    out = {f"g{k}.opened": np.frombuffer(_json.dumps(index), np.uint8)}
    for j, (_, arr) in enumerate(opened):
        body = _json.dumps(wire.layout_json(arr.layout(), None, 0.0))
        out[f"g{k}.opened.{j}"] = np.frombuffer(body, np.uint8)
    return out


def _search_entries(k: int, vm: ViewModel) -> dict[str, np.ndarray]:
    from tpx_inspect.viewmodel import wire

    found = wire.fields(vm)
    values = {"fields": list(found), "values": [v for _, v in found.values()]}
    return {
        f"g{k}.codes": np.stack([c.astype(np.int32) for c, _ in found.values()]),
        f"g{k}.values": np.frombuffer(_json.dumps(values), np.uint8),
    }


def write(
    trace_path: str | os.PathLike[str],
    models: dict[int, ViewModel],
    graphs: list[dict[str, Any]] | None = None,
) -> bool:
    """Keep the view models of some graphs (by graph index) beside the trace at
    ``trace_path``, with the entries of other graphs already kept for the same trace and
    code, and ``graphs``, the trace's graph list (``listing.listing``), when given. False
    (with a log line) when the folder is not writable."""
    side = sidecar_path(trace_path)
    try:
        digest = trace_digest(trace_path)
        entries = _entries(side, digest) or {}
        if graphs is not None:
            entries["graphs"] = np.frombuffer(_json.dumps({"graphs": graphs}), np.uint8)
        for k, vm in models.items():
            for part, doc in (("tree", _tree_doc(vm)), ("first", _first_doc(vm))):
                entries[f"g{int(k)}.{part}"] = np.frombuffer(_json.dumps(doc), np.uint8)
            entries.update(_search_entries(int(k), vm))
            entries.update(_opened_entries(int(k), vm))
        meta = {"format": FORMAT, "version": code_version(), "trace": digest}
        entries["meta"] = np.frombuffer(_json.dumps(meta), np.uint8)
        buf = io.BytesIO()
        np.savez(buf, **entries)
        replace_file(os.fspath(side), buf.getvalue())
        return True
    except OSError as exc:
        log.info("view model not kept beside %s: %s", trace_path, exc)
        return False


def keep(trace_path: str | os.PathLike[str], trace: Any, most: int = 2) -> bool:
    """Build and keep beside a just-saved trace the models of its first ``most`` graphs of at
    least :data:`SAVE_NODES` nodes, and its graph list, so that even the first server to open
    it lists its graphs and shows its first frame without reading the trace or building them
    (a server writes the models on first open otherwise). Costs a build: ~1.3 s CPU for a
    100,000-node graph. False when none was kept.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> keep("unused.json", tpx_inspect.trace(lambda: x.sum().backward()))
    False
    """
    from tpx_inspect.viewmodel.listing import listing
    from tpx_inspect.viewmodel.tree import build

    big = [k for k, g in enumerate(trace.graphs) if len(g.nodes) >= SAVE_NODES][:most]
    if not big:
        return False
    try:
        return write(trace_path, {k: build(trace.graphs[k]) for k in big}, listing(trace))
    except Exception as exc:  # NOTE: a saved trace stands without it; the server rebuilds it
        log.warning("view model of %s not kept: %s: %s", trace_path, type(exc).__name__, exc)
        return False


# -- reading ------------------------------------------------------------------------------------
def _entries(
    side: Path, digest: str, only: tuple[str, ...] | None = None
) -> dict[str, np.ndarray] | None:
    """The entries of the sidecar (every one, or ``meta`` and ``only``) when it names this
    trace and code, else None (a reason logged when it exists but is not used)."""
    if not side.is_file():
        return None
    try:
        with zipfile.ZipFile(side) as z:
            if any(i.file_size > _MAX_ENTRY for i in z.infolist()):
                raise ValueError("an entry is too large")
        with np.load(side, allow_pickle=False) as z:
            wanted = z.files if only is None else [k for k in ("meta", *only) if k in z.files]
            entries = {k: z[k] for k in wanted}
        meta = _json.loads(bytes(entries["meta"]))
        if meta.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        if meta.get("version") != code_version():
            log.info("view sidecar %s: made by another view-model version: rebuilt", side)
            return None
        if meta.get("trace") != digest:
            log.info("view sidecar %s: made for another trace: rebuilt", side)
            return None
        return entries
    except Exception as exc:  # NOTE: whatever is wrong with it, it is not trusted
        log.warning("view sidecar %s ignored: %s: %s", side, type(exc).__name__, exc)
        return None


def _entry(trace_path: str | os.PathLike[str], graph: int, part: str) -> Any:
    try:
        digest = trace_digest(trace_path)
    except OSError:
        return None
    side = sidecar_path(trace_path)
    name = f"g{int(graph)}.{part}"
    entries = _entries(side, digest, (name,))
    blob = None if entries is None else entries.get(name)
    if blob is None:
        return None
    try:
        doc = _json.loads(bytes(blob))
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        return doc
    except Exception as exc:
        log.warning("view sidecar %s ignored: %s: %s", side, type(exc).__name__, exc)
        return None


def graph_list(trace_path: str | os.PathLike[str]) -> list[dict[str, Any]] | None:
    """The trace's graph list (``listing.listing``) as kept beside it by :func:`keep`, or
    None when not kept or stale."""
    try:
        digest = trace_digest(trace_path)
    except OSError:
        return None
    side = sidecar_path(trace_path)
    entries = _entries(side, digest, ("graphs",))
    blob = None if entries is None else entries.get("graphs")
    try:
        graphs = None if blob is None else _json.loads(bytes(blob)).get("graphs")
        if graphs is not None and not all(isinstance(g, dict) for g in graphs):
            raise ValueError("a graph is not an object")
        return graphs
    except Exception as exc:
        log.warning("view sidecar %s ignored: %s: %s", side, type(exc).__name__, exc)
        return None


def first_screen(trace_path: str | os.PathLike[str], graph: int) -> dict[str, Any] | None:
    """The first screen's layout of graph ``graph`` as kept beside the trace (the JSON of
    ``wire.layout_json`` and the ``expanded`` groups), or None when not kept or stale."""
    first = _entry(trace_path, graph, "first")
    if not (isinstance(first, dict) and isinstance(first.get("boxes"), list)):
        return None
    return first


def opened(
    trace_path: str | os.PathLike[str], graph: int, expanded: tuple[str, ...]
) -> bytes | None:
    """The kept answer (JSON bytes of ``wire.layout_json``) of state ``expanded`` (sorted, the
    root included) when it is one that opens a big repeat of the first screen, else None."""
    index = _entry(trace_path, graph, "opened")
    states = index.get("states") if isinstance(index, dict) else None
    if not isinstance(states, list):
        return None
    match = [j for j, key in enumerate(states) if isinstance(key, list) and tuple(key) == expanded]
    if not match:
        return None
    try:
        digest = trace_digest(trace_path)
    except OSError:
        return None
    name = f"g{int(graph)}.opened.{match[0]}"
    entries = _entries(sidecar_path(trace_path), digest, (name,))
    blob = None if entries is None else entries.get(name)
    if blob is None or blob.dtype != np.uint8 or bytes(blob[:1]) != b"{":
        return None
    return bytes(blob)


def read(trace_path: str | os.PathLike[str], graph: int, g: Graph) -> ViewModel | None:
    """The view model of graph ``graph`` (``g``, read from ``trace_path``) as kept beside
    it, checked against ``g``; None when not kept, stale or not consistent (logged)."""
    tree = _entry(trace_path, graph, "tree")
    if tree is None:
        return None
    try:
        with paused_gc():
            return _restore(tree, g)
    except Exception as exc:
        log.warning("view sidecar of %s, graph %d ignored: %s", trace_path, graph, exc)
        return None


def _restore(tree: dict[str, Any], g: Graph) -> ViewModel:
    n = len(g.nodes)
    if tree["nodes"] != n:
        raise ValueError(f"{tree['nodes']} nodes kept, the graph has {n}")
    groups: dict[str, Group] = {}
    for row in tree["groups"]:
        gid, kind, label, title, parent, kids, size, depth, scope, count, first = row
        groups[gid] = Group(str(gid), str(kind), str(label), str(title), parent, tuple(kids),
                            int(size), int(depth), str(scope), int(count), int(first))  # fmt: skip
    owner = owner_of(tree)
    expanded = tuple(str(x) for x in tree["default_expanded"])
    return ViewModel(groups, owner, expanded, columns(g))


_KEPT: dict[tuple, Kept] = {}
_KEPT_LOCK = threading.Lock()  # NOTE: callers arriving together wait for one read


def kept(trace_path: str | os.PathLike[str], graph: int) -> Kept | None:
    """The :class:`Kept` tree and search fields of graph ``graph`` when current (cached per
    trace digest), else None (logged when the sidecar is there but not used)."""
    try:
        digest = trace_digest(trace_path)
    except OSError:
        return None
    key = (os.fspath(trace_path), digest, int(graph))
    with _KEPT_LOCK:
        hit = _KEPT.get(key)
        return hit if hit is not None else _read_kept(trace_path, graph, digest, key)


def _read_kept(trace_path: str | os.PathLike[str], graph: int, digest: str, key: tuple):
    side = sidecar_path(trace_path)
    names = tuple(f"g{int(graph)}.{p}" for p in ("tree", "codes", "values"))
    entries = _entries(side, digest, names)
    if entries is None or any(k not in entries for k in names):
        return None
    try:
        tree, codes, values = entries[names[0]], entries[names[1]], entries[names[2]]
        with paused_gc():
            hit = Kept(_json.loads(bytes(tree)), codes, _json.loads(bytes(values)))
    except Exception as exc:
        log.warning("view sidecar %s ignored: %s: %s", side, type(exc).__name__, exc)
        return None
    while len(_KEPT) >= 4:
        _KEPT.pop(next(iter(_KEPT)))
    _KEPT[key] = hit
    return hit
