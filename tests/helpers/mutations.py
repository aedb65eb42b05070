"""Hostile traces, generated: every mutation is a function that damages a copy of a real run
folder (``trace.json`` + ``trace.npz``). Nothing is stored as a blob; ``mutations()`` lists
them all with stable names.

Kinds: a field of the JSON set to a value of every other type (each field of one node, one
edge, one graph, one run, the header), raw-text damage (deep nesting, NaN, Infinity, lone
surrogates, huge strings and numbers), sidecar arrays replaced by arrays of the wrong dtype,
shape or values (the hash fixed up so that the loader reaches them), zip-level damage
(corrupt deflate data with a matching hash, a header claiming 10^12 elements, a member
claiming 1.6 GB, zero bytes), and files that are not files (a FIFO, a link to /dev/zero, a
sidecar path leading outside the folder); for format version 2, run columns whose counts
claim more nodes than the structure has (10^15), fewer, none, or more values than counts.
The corpus is made of a version 2 trace (what ``save`` writes) or, with ``version=1``, of the
same trace in version 1 (older traces keep loading, and are refused as before).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import tpx as tp
import tpx_inspect
from tpx_inspect._node_runs import RUN_FIELDS
from tpx_inspect._sidecar_write import npz_bytes
from tpx_inspect.format import VERSION

Doc = dict[str, Any]


def make_base(folder: Path, version: int = VERSION) -> Path:
    """A real run folder: two steps of a scoped model with a parameter, every value kept,
    saved in format ``version``."""
    w = tp.asarray([[0.5, -1.0], [1.5, 0.25]], requires_grad=True)
    with tpx_inspect.capture("all", values="all", timing=False, params={"w": w}) as cap:
        for step in range(2):
            x = tp.asarray([[1.0, 2.0]]) * (step + 1)
            with tp.scope("layer"):
                h = (x @ w).tanh()
            (h * h + h).sum().backward()
    folder.mkdir(parents=True, exist_ok=True)
    tpx_inspect.save(cap.trace, str(folder / "trace.json"), version=version)
    return folder


@dataclass(frozen=True)
class Mutation:
    """A named way to damage a run folder in place."""

    name: str
    apply: Callable[[Path], None]


# -- helpers --------------------------------------------------------------------------------------
def _doc(folder: Path) -> Doc:
    return json.loads((folder / "trace.json").read_text())


def _write_doc(folder: Path, doc: Doc) -> None:
    (folder / "trace.json").write_text(json.dumps(doc))


def _edit(fn: Callable[[Doc], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        doc = _doc(folder)
        fn(doc)
        _write_doc(folder, doc)

    return apply


def _text(fn: Callable[[str], str]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        p = folder / "trace.json"
        p.write_text(fn(p.read_text()), encoding="utf-8", errors="surrogatepass")

    return apply


def _set_sidecar(folder: Path, blob: bytes) -> None:
    (folder / "trace.npz").write_bytes(blob)
    doc = _doc(folder)
    doc["sidecar"].update(bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest())
    _write_doc(folder, doc)


def _arrays(folder: Path) -> dict[str, np.ndarray]:
    with np.load(folder / "trace.npz") as npz:
        return {k: npz[k] for k in npz.files}


def _array_edit(fn: Callable[[dict[str, np.ndarray]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        arrays = _arrays(folder)
        fn(arrays)
        _set_sidecar(folder, npz_bytes(arrays))

    return apply


def _zip_edit(fn: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        _set_sidecar(folder, fn((folder / "trace.npz").read_bytes()))

    return apply


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _put(path: tuple, value: Any) -> Callable[[Doc], None]:
    def fn(doc: Doc) -> None:
        _get(doc, path[:-1])[path[-1]] = value

    return fn


def _drop(path: tuple) -> Callable[[Doc], None]:
    def fn(doc: Doc) -> None:
        del _get(doc, path[:-1])[path[-1]]

    return fn


# -- field mutations ------------------------------------------------------------------------------
NODE = ("runs", 0, "structures", 0, "nodes")
GRAPH = ("runs", 0, "graphs", 1)


def _entry(column: str, i: int, version: int) -> tuple:
    """The path of node ``i``'s entry of ``column``; in a version 2 run column, the value of
    its last run (the base trace's node 5), or for ``shape`` of its first (node 0's [2, 2]:
    node 5 is the scalar loss, whose shape has no item to damage)."""
    if version >= 2 and column in RUN_FIELDS:
        return (*NODE, column, "values", 0 if column == "shape" else -1)
    return (*NODE, column, i)


def fields(version: int = VERSION) -> list[tuple]:
    """The fields of the base trace that :func:`field_mutations` damages: FIELDS, a node's
    entry of a run column moved into its runs (version 2), and the runs themselves."""

    def moved(path: tuple) -> tuple:
        k = len(NODE)
        entry = len(path) >= k + 2 and path[:k] == NODE
        return (*_entry(path[k], path[k + 1], version), *path[k + 2 :]) if entry else path

    runs = [(*NODE, c, part) for c in ("kind", "source") for part in ("values", "counts")]
    return [*map(moved, FIELDS), *(runs if version >= 2 else ())]


FIELDS: list[tuple] = [
    ("format",), ("version",), ("meta",), ("runs",), ("sidecar",), ("sidecar", "file"),
    ("sidecar", "bytes"), ("sidecar", "sha256"),
    ("runs", 0), ("runs", 0, "id"), ("runs", 0, "name"), ("runs", 0, "status"),
    ("runs", 0, "steps"), ("runs", 0, "policy"), ("runs", 0, "error"), ("runs", 0, "structures"),
    ("runs", 0, "graphs"), ("runs", 0, "structures", 0), ("runs", 0, "structures", 0, "id"),
    ("runs", 0, "structures", 0, "roots"), ("runs", 0, "structures", 0, "roots", 0),
    ("runs", 0, "structures", 0, "sources"), ("runs", 0, "structures", 0, "sources", 0),
    ("runs", 0, "structures", 0, "sources", 0, 1), NODE,
    *[(*NODE, col) for col in ("kind", "op", "name", "label", "params", "scope", "source",
                                "inputs", "shape", "dtype", "saved")],
    (*NODE, "kind", 1), (*NODE, "op", 1), (*NODE, "params", 1), (*NODE, "source", 1),
    (*NODE, "inputs", 1), (*NODE, "inputs", 1, 0), (*NODE, "inputs", 1, 0, 0),
    (*NODE, "inputs", 1, 0, 1), (*NODE, "inputs", 1, 0, 1, 0), (*NODE, "inputs", 1, 0, 2),
    (*NODE, "shape", 1), (*NODE, "shape", 1, 0), (*NODE, "dtype", 1), (*NODE, "saved", 1),
    (*NODE, "saved", 1, 0, 3),
    GRAPH, (*GRAPH, "id"), (*GRAPH, "step"), (*GRAPH, "kind"), (*GRAPH, "structure"),
    (*GRAPH, "detail"), (*GRAPH, "peak_saved_bytes"), (*GRAPH, "backward_seconds"),
    (*GRAPH, "rows"), (*GRAPH, "rows", "summaries"), (*GRAPH, "rows", "nodes", 1),
    ("runs", 0, "graphs", 0, "rows", "grads_out", 0),
]  # fmt: skip
HOSTILE: list[Any] = [None, 42, -1, 10**30, 1.5, True, "x", "", [], [0], {}, {"a": 1},
                      "💥\u202e", -(2**63)]  # fmt: skip


def field_mutations(seed: int = 16, version: int = VERSION) -> list[Mutation]:
    """Each field of ``fields(version)`` replaced by two hostile values of another type, and
    dropped."""
    rng = random.Random(seed)
    out = []
    for path in fields(version):
        name = ".".join(map(str, path))
        for value in rng.sample(HOSTILE, 2):
            out.append(Mutation(f"set {name} = {value!r}", _edit(_put(path, value))))
        if len(out) % 3 == 0:
            out.append(Mutation(f"drop {name}", _edit(_drop(path))))
    return out


# -- the examples and other targeted damage ----------------------------------------------
def _fifo(folder: Path) -> None:
    os.remove(folder / "trace.npz")
    os.mkfifo(folder / "trace.npz")


def _json_fifo(folder: Path) -> None:
    os.remove(folder / "trace.json")
    os.mkfifo(folder / "trace.json")


def _link(target: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        os.remove(folder / "trace.npz")
        os.symlink(target, folder / "trace.npz")

    return apply


def _outside(folder: Path) -> None:
    blob = (folder / "trace.npz").read_bytes()
    (folder.parent / f"{folder.name}-outside.npz").write_bytes(blob)
    _edit(_put(("sidecar", "file"), f"../{folder.name}-outside.npz"))(folder)


def _corrupt_deflate(blob: bytes) -> bytes:
    """Flip bytes inside the first member's compressed data (the CRC no longer matches,
    or zlib fails first)."""
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        info = z.infolist()[0]
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data = bytearray(blob)
    for k in range(start + 2, min(start + info.compress_size, start + 40)):
        data[k] ^= 0x5A
    return bytes(data)


def _claim_size(size: int) -> Callable[[bytes], bytes]:
    """Rewrite the first member's uncompressed size in both zip headers (a zip bomb's claim)."""

    def fn(blob: bytes) -> bytes:
        data = bytearray(blob)
        local = data.find(b"PK\x03\x04")
        central = data.find(b"PK\x01\x02")
        data[local + 22 : local + 26] = size.to_bytes(4, "little")
        data[central + 24 : central + 28] = size.to_bytes(4, "little")
        return bytes(data)

    return fn


def _huge_header(arrays: dict[str, np.ndarray]) -> bytes:
    """An npz whose 'r0.summaries' member claims 10^12 rows."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for k, a in sorted(arrays.items()):
            member = io.BytesIO()
            if k == "r0.summaries":
                header = {"descr": "<f8", "fortran_order": False, "shape": (10**12, 10)}
                np.lib.format.write_array_header_1_0(member, header)
                member.write(a.tobytes())
            else:
                np.lib.format.write_array(member, a, allow_pickle=False)
            z.writestr(k + ".npy", member.getvalue())
    return buf.getvalue()


def _pickled(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{**arrays, "r0.nodes": np.array([object()], dtype=object)})
    return buf.getvalue()


def _blob_from_arrays(fn: Callable[[dict], bytes]) -> Callable[[Path], None]:
    return lambda folder: _set_sidecar(folder, fn(_arrays(folder)))


def _set_array(key: str, value: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def fn(arrays: dict[str, np.ndarray]) -> None:
        arrays[key] = value(arrays[key])

    return _array_edit(fn)


def _with(a: np.ndarray, index: Any, value: Any) -> np.ndarray:
    a = a.copy()
    a[index] = value
    return a


def _many_graphs(n: int) -> Callable[[Doc], None]:
    def fn(doc: Doc) -> None:
        graphs = doc["runs"][0]["graphs"]
        g = graphs[-1]
        graphs.extend({**g, "id": len(graphs) + k} for k in range(n))

    return fn


ALL = slice(None)
INDEX = "values.index"
GRAPH0 = ("runs", 0, "graphs", 0)
PREVIEWS = {1: "r0.previews", 2: "r0.unkept_previews"}
"""The stored previews of the base run (format 2.1 derives those of kept values)."""


def _swap(old: str, new: str) -> Callable[[Path], None]:
    return _text(lambda t: t.replace(old, new, 1))


def _inline(key: str, dtype: str, shape: list, data: list) -> Callable[[Path], None]:
    arrays = {key: {"dtype": dtype, "shape": shape, "data": data}}
    return _edit(lambda d: d.update(sidecar=None, arrays=arrays))


def _nested_dict(depth: int) -> dict:
    d: dict = {}
    for _ in range(depth):
        d = {"a": d}
    return d


def _nest(depth: int) -> Callable[[str], str]:
    return lambda text: text.replace('"meta":', '"meta":' + "[" * depth, 1)


def targeted(version: int = VERSION) -> list[Mutation]:
    """The examples of issue 16, then damage aimed at each sidecar array."""
    m = Mutation

    def at(column: str) -> tuple:
        return _entry(column, 1, version)

    out = [
        m("[ x 50,000 (raw text)", _text(lambda t: "[" * 50_000)),
        m("meta nested 50,000 deep", _text(_nest(50_000))),
        m("params nested 500 deep", _edit(_put(at("params"), _nested_dict(500)))),
        m("NaN in the JSON", _swap('"backward_seconds":0.0', '"backward_seconds":NaN')),
        m("Infinity in the JSON", _swap('"steps":2', '"steps":Infinity')),
        m("1e999 in the JSON", _swap('"backward_seconds":0.0', '"backward_seconds":1e999')),
        m("an integer of 5000 digits", _swap('"steps":2', '"steps":' + "9" * 5000)),
        m("lone surrogate in a scope", _swap('"layer"', '"lay\\ud800er"')),
        m("lone low surrogate in the name", _swap('"name":"', '"name":"\\udfff')),
        m("invalid UTF-8", lambda f: (f / "trace.json").write_bytes(b'{"format": "\xff\xfe"}')),
        m("2 MB version string", _edit(_put(("version",), "v" * 2_000_000))),
        m("2 MB run name", _edit(_put(("runs", 0, "name"), "n" * 2_000_000))),
        m("shape null", _edit(_put(at("shape"), None))),
        m("edge [0]", _edit(_put((*NODE, "inputs", 1, 0), [0]))),
        m("op 42", _edit(_put(at("op"), 42))),
        m("params as a list", _edit(_put((*NODE, "params"), [[1, 2]] * 6))),
        m("root out of range", _edit(_put(("runs", 0, "structures", 0, "roots"), [99]))),
        m("unknown dtype name", _edit(_put(at("dtype"), "object"))),
        m("source index out of range", _edit(_put(at("source"), 999))),
        m("input from a later node", _edit(_put((*NODE, "inputs", 1, 0, 0), 5))),
        m("rows past the table", _edit(_put((*GRAPH, "rows", "nodes"), [0, 10**6]))),
        m("rows reversed", _edit(_put((*GRAPH, "rows", "summaries"), [5, 2]))),
        m("graph of an unknown structure", _edit(_put((*GRAPH, "structure"), 7))),
        m("shape of 10^15 elements", _edit(_put(at("shape"), [10**5, 10**5, 10**5]))),
        m("sidecar null without arrays", _edit(_put(("sidecar",), None))),
        m("inline arrays wrong size", _inline("values.index", "<i8", [10**6, 4], [1])),
        m("inline arrays object dtype", _inline("x", "O", [1], [1])),
        m("inline arrays bad number", _inline("x", "<i8", [1], ["nope"])),
        m("an extra field (newer minor version)", _edit(_put((*GRAPH0, "zz_new"), {"a": 1}))),
        m("an extra node column", _edit(_put((*NODE, "zz_future"), [None] * 6))),
        m("sidecar is a FIFO", _fifo),
        m("trace.json is a FIFO", _json_fifo),
        m("sidecar links to /dev/zero", _link("/dev/zero")),
        m("sidecar links outside the folder", _link("/etc/hostname")),
        m("sidecar file ../outside.npz", _outside),
        m("sidecar file /etc/passwd", _edit(_put(("sidecar", "file"), "/etc/passwd"))),
        m("sidecar file is the folder", _edit(_put(("sidecar", "file"), "."))),
        m("zero-byte sidecar", lambda f: _set_sidecar(f, b"")),
        m("zero-byte trace.json", lambda f: (f / "trace.json").write_bytes(b"")),
        m("sidecar missing", lambda f: os.remove(f / "trace.npz")),
        m("sidecar not a zip (hash matches)", lambda f: _set_sidecar(f, b"PK\x03\x04 not really")),
        m("corrupt deflate data, hash matches", _zip_edit(_corrupt_deflate)),
        m("member claims 1.6 GB (zip bomb)", _zip_edit(_claim_size(1_600_000_000))),
        m("member claims 3 bytes", _zip_edit(_claim_size(3))),
        m("npy header claims 10^12 elements", _blob_from_arrays(_huge_header)),
        m("pickled member", _blob_from_arrays(_pickled)),
        m("drop r0.summaries", _array_edit(lambda a: a.pop("r0.summaries"))),
        m("drop values.index", _array_edit(lambda a: a.pop("values.index"))),
        m("summaries 1-D", _set_array("r0.summaries", lambda a: a.reshape(-1))),
        m("summaries as int", _set_array("r0.summaries", lambda a: a.astype(np.int64))),
        m("NaN value ids", _set_array("r0.summaries", lambda a: _with(a, (ALL, 8), np.nan))),
        m("value id past the values", _set_array("r0.summaries", lambda a: _with(a, (0, 8), 1e6))),
        m("preview length 1e300", _set_array("r0.summaries", lambda a: _with(a, (0, 9), 1e300))),
        m("infinite NaN count", _set_array("r0.summaries", lambda a: _with(a, (0, 5), np.inf))),
        m("previews 3 wide", _set_array(PREVIEWS[version], lambda a: a[:, :3].copy())),
        m("node rows -5", _set_array("r0.nodes", lambda a: _with(a, (0, 0), -5))),
        m("node rows 10^9", _set_array("r0.nodes", lambda a: _with(a, (1, 1), 10**9))),
        m("backward position -7", _set_array("r0.nodes", lambda a: _with(a, (1, 2), -7))),
        m("accumulation target 99", _set_array("r0.accumulations", lambda a: _with(a, (0, 0), 99))),
        m("accumulation source -9", _set_array("r0.accumulations", lambda a: _with(a, (0, 1), -9))),
        m("grads_out rows 2**40", _set_array("r0.grads_out", lambda a: _with(a, 0, 2**40))),
        m("consts cut short", _set_array("r0.consts", lambda a: a[:1].copy())),
        m("times 1-D", _set_array("r0.times", lambda a: a.reshape(-1))),
        m("value index past the buffer", _set_array(INDEX, lambda a: _with(a, (0, 1), 10**9))),
        m("value index negative ndim", _set_array(INDEX, lambda a: _with(a, (0, 3), -3))),
        m("value index unknown dtype code", _set_array(INDEX, lambda a: _with(a, (0, 0), 9))),
        m("value shapes negative", _set_array("values.shapes", lambda a: _with(a, 0, -4))),
        m("value dtypes as ints", _set_array("values.dtypes", lambda a: np.arange(len(a)))),
        m("values buffer 2-D", _set_array("values.0", lambda a: a.reshape(1, -1))),
    ]  # fmt: skip
    return out + (run_mutations() + derived_mutations() if version >= 2 else [])


def _runs(column: str, values: list | None, counts: list) -> Callable[[Path], None]:
    def fn(doc: Doc) -> None:
        runs = _get(doc, (*NODE, column))
        runs["counts"] = counts
        if values is not None:
            runs["values"] = values

    return _edit(fn)


def run_mutations() -> list[Mutation]:
    """Run columns (format 2) that do not add up to the structure's 6 nodes: nothing of the
    size they claim may be made."""
    m = Mutation
    return [
        m("runs claim 10^15 nodes", _runs("dtype", None, [10**15])),
        m("runs claim 2**53 nodes each", _runs("kind", None, [2**53 - 1] * 3)),
        m("runs cover 5 of 6 nodes", _runs("kind", None, [1, 3, 1])),
        m("runs cover 7 of 6 nodes", _runs("kind", None, [1, 5, 1])),
        m("a run of 0 nodes", _runs("kind", ["param", "op", "op", "loss"], [1, 4, 0, 1])),
        m("a run of -1 nodes", _runs("kind", None, [1, 6, -1])),
        m("a count of 1.0", _runs("dtype", None, [6.0])),
        m("a count of true", _runs("label", None, [True, 5])),
        m("more values than counts", _runs("scope", ["", "layer", "", "x"], [1, 2, 3])),
        m("more counts than values", _runs("scope", ["", "layer"], [1, 2, 3])),
        m("no runs for 6 nodes", _runs("op", [], [])),
        m("runs as a list of pairs", _edit(_put((*NODE, "kind"), [["op", 6]]))),
        m("runs without counts", _edit(_drop((*NODE, "name", "counts")))),
        m("runs with an extra key", _edit(_put((*NODE, "name", "first"), 0))),
        m("a version 1 column in version 2", _edit(_put((*NODE, "dtype"), ["float32"] * 6))),
        m("version 2 runs in version 1", _edit(_put(("version",), 1))),
    ]  # fmt: skip


def _graph_rows(graph: int, table: str, rows: Callable[[list], list]) -> Callable[[Path], None]:
    def fn(doc: Doc) -> None:
        graphs = doc["runs"][0]["graphs"]
        graphs[graph]["rows"][table] = rows(graphs)

    return _edit(fn)


def derived_mutations() -> list[Mutation]:
    """Format 2.1: a run whose previews of kept values are derived (every value of the base is
    kept: its unkept previews have no rows) must say so, and its preview rows must fit."""
    m = Mutation

    def first(gs: list) -> list:
        return gs[0]["rows"]["previews"]

    return [
        m("derived previews false", _edit(_put(("runs", 0, "derived_previews"), False))),
        m("derived previews 1", _edit(_put(("runs", 0, "derived_previews"), 1))),
        m("derived previews unsaid", _edit(_drop(("runs", 0, "derived_previews")))),
        m("drop r0.unkept_previews", _array_edit(lambda a: a.pop("r0.unkept_previews"))),
        m("unkept previews a row too many",
          _set_array("r0.unkept_previews", lambda a: np.zeros((len(a) + 1, a.shape[1])))),
        m("unkept previews as int", _set_array("r0.unkept_previews", lambda a: a.astype(int))),
        m("preview length past its value",
          _set_array("r0.summaries", lambda a: _with(a, (ALL, 9), 6.0))),
        m("preview rows of two graphs overlap", _graph_rows(1, "previews", first)),
        m("preview rows past their summaries",
          _graph_rows(0, "previews", lambda gs: [first(gs)[0], first(gs)[1] + 1])),
        m("preview rows leave a gap",
          _graph_rows(1, "previews", lambda gs: [x + 1 for x in gs[1]["rows"]["previews"]])),
    ]  # fmt: skip


def many_graphs(n: int = 100_000) -> Mutation:
    """The base trace with ``n`` more graphs (all of one structure, sharing rows)."""
    return Mutation(f"{n} graphs", _edit(_many_graphs(n)))


def mutations(version: int = VERSION) -> list[Mutation]:
    """Every mutation of a base trace of format ``version``, in a stable order with unique
    names."""
    out = targeted(version) + field_mutations(version=version)
    names = [m.name for m in out]
    assert len(set(names)) == len(names), "mutation names must be unique"
    return out


def build_corpus(base: Path, root: Path, version: int = VERSION) -> list[tuple[Mutation, Path]]:
    """One damaged copy of the run folder ``base`` (of format ``version``) per mutation,
    under ``root``."""
    out = []
    for k, m in enumerate(mutations(version)):
        folder = root / f"case{k:03d}"
        folder.mkdir(parents=True)
        for name in ("trace.json", "trace.npz"):
            (folder / name).write_bytes((base / name).read_bytes())
        m.apply(folder)
        out.append((m, folder))
    return out
