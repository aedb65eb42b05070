"""The header of a trace file read without its node columns: format version, metadata, and per
run its name, status, steps, error and graphs (step, kind, detail, node count), in a few
milliseconds where a full load of a 100,000-node trace takes most of a second.

Only the bytes of the JSON are read: each run's ``structures`` (the node columns, nearly all of
a big trace) and inline ``arrays`` are cut out of the text by a vectorised scan (NumPy over the
bytes: real quotes, then the brackets outside strings and their depths), and the rest is parsed
and checked against the schema as :func:`~tpx_inspect._trace_load.load` checks it. What was cut
out and the sidecar are not looked at: a trace whose header reads may still fail to load.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpx_inspect._safe_read import LoadLimits, read_regular
from tpx_inspect._sidecar_read import sidecar_bytes
from tpx_inspect._trace_load import check_document, parse_json
from tpx_inspect.nodes import ErrorInfo

__all__ = ["GraphHeader", "RunHeader", "TraceHeader", "read_header"]


@dataclass(frozen=True)
class GraphHeader:
    """One graph of a run, as its header lists it (no nodes read)."""

    id: int
    step: int
    kind: str
    detail: str
    structure: int
    nodes: int


@dataclass(frozen=True)
class RunHeader:
    """One capture of a trace without its nodes: what :class:`~tpx_inspect.records.Run` says
    about it, with :class:`GraphHeader` s for its graphs."""

    id: int
    name: str
    status: str
    steps: int
    policy: dict[str, Any]
    error: ErrorInfo | None
    graphs: tuple[GraphHeader, ...]


@dataclass(frozen=True)
class TraceHeader:
    """What a trace file says about itself, read without its node columns or sidecar
    (:func:`read_header`). ``modified`` is the file's modification time (seconds since the
    epoch): traces store no creation time."""

    version: int
    minor: int
    meta: dict[str, Any]
    runs: tuple[RunHeader, ...]
    modified: float

    @property
    def graphs(self) -> tuple[GraphHeader, ...]:
        """The graphs of every run, in order."""
        return tuple(g for r in self.runs for g in r.graphs)

    @property
    def nodes(self) -> int:
        """Nodes over every graph."""
        return sum(g.nodes for g in self.graphs)


def read_header(
    path: str, *, limits: LoadLimits | None = None, check_sidecar: bool = False
) -> TraceHeader:
    """The header of the trace file ``path``: its version, metadata and runs, without reading
    the node columns or the sidecar. Raises :class:`TraceFormatError` as
    :func:`~tpx_inspect.format.load` does for what it reads (not a trace, a corrupt or cut-off
    JSON, an unknown version, a field against the schema). With ``check_sidecar`` the sidecar
    is read too and checked against the size and SHA-256 the trace records (missing, cut or
    from another capture), not unpacked.

    >>> import tempfile, tpx as tp, tpx_inspect
    >>> x = tp.ones(3, requires_grad=True)
    >>> path = os.path.join(tempfile.mkdtemp(), "t.json")
    >>> _ = tpx_inspect.save(tpx_inspect.trace(lambda: (x * 2).sum().backward()), path)
    >>> head = read_header(path)
    >>> head.runs[0].status, len(head.graphs), head.nodes
    ('ok', 1, 3)
    """
    limits = limits if limits is not None else LoadLimits.from_env()
    blob = read_regular(path, limits.max_json_bytes)
    modified = os.stat(path).st_mtime
    cut = _without_bulk(blob)
    doc = parse_json(blob if cut is None else cut, path)
    minor = check_document(doc, path)
    if check_sidecar and not isinstance(doc.get("arrays"), dict):
        sidecar_bytes(path, doc, limits)
    runs = tuple(_run_header(r) for r in doc["runs"])
    return TraceHeader(doc["version"], minor, doc.get("meta") or {}, runs, modified)


def _run_header(r: dict[str, Any]) -> RunHeader:
    graphs = tuple(
        GraphHeader(g["id"], g["step"], g["kind"], g["detail"], g["structure"],
                    g["rows"]["nodes"][1] - g["rows"]["nodes"][0])
        for g in r["graphs"]
    )  # fmt: skip
    e = r["error"]
    err = None if e is None else ErrorInfo(e["type"], e["message"], e["traceback"])
    return RunHeader(r["id"], r["name"], r["status"], r["steps"], r["policy"], err, graphs)


# NOTE: the bulk of a trace: the value of a run's "structures" (depth 3: document, runs, run)
# and of the document's inline "arrays" (depth 1)
_KEYS = {b'"structures"': 3, b'"arrays"': 1}
_VALUE = re.compile(rb"[ \t\r\n]*:[ \t\r\n]*[\[{]")
_RUNS = re.compile(rb'"runs"[ \t\r\n]*:[ \t\r\n]*$')


def _without_bulk(blob: bytes) -> bytes | None:
    """``blob`` with the values of the runs' ``structures`` and of ``arrays`` emptied, or None
    when there is nothing to cut or the text is not balanced (the parser then says why)."""
    hits = sorted((i, key) for key in _KEYS for i in _find_all(blob, key))
    if not hits:
        return None
    at, depth, opens = _brackets(np.frombuffer(blob, np.uint8))
    if not len(depth) or depth.min() < 0 or depth[-1] != 0:
        return None
    parts, start = [], 0
    for i, key in hits:
        m = _VALUE.match(blob, i + len(key))
        k = int(np.searchsorted(at, m.end() - 1)) if m else len(at)
        if i < start or k >= len(at) or at[k] != m.end() - 1 or depth[k] - 1 != _KEYS[key]:
            continue  # NOTE: inside a string, a value cut out already, or a nested key
        if _KEYS[key] == 3 and not _in_runs(blob, at, depth, opens, k):
            continue
        ends = np.flatnonzero(depth[k + 1 :] == depth[k] - 1)
        close = int(at[k + 1 + ends[0]])
        parts += [blob[start : m.end()], blob[close : close + 1]]
        start = close + 1
    return b"".join([*parts, blob[start:]]) if parts else None


def _find_all(blob: bytes, key: bytes) -> list[int]:
    out, i = [], blob.find(key)
    while i >= 0:
        out.append(i)
        i = blob.find(key, i + 1)
    return out


def _brackets(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions of the brackets outside strings, the depth after each, and which open."""
    low = a | 32  # NOTE: [ ] are { } less 32: one compare finds both kinds
    pos = np.flatnonzero((low == ord("{")) | (low == ord("}")) | (a == ord('"')))
    escaped = _escaped(a)
    if len(escaped):
        pos = pos[~np.isin(pos, escaped)]
    c = a[pos]
    quote = c == ord('"')
    outside = np.bitwise_xor.accumulate(quote.view(np.uint8)) == 0  # NOTE: quote parity
    pos, c = pos[outside & ~quote], c[outside & ~quote]
    opens = (c | 32) == ord("{")
    return pos, np.cumsum(np.where(opens, 1, -1).astype(np.int8), dtype=np.int64), opens


def _escaped(a: np.ndarray) -> np.ndarray:
    """Positions of the characters escaped by a backslash (an odd run of them before)."""
    slashes = np.flatnonzero(a == ord("\\"))
    if not len(slashes):
        return slashes
    breaks = np.flatnonzero(np.diff(slashes) != 1)
    firsts = slashes[np.r_[0, breaks + 1]]
    lasts = slashes[np.r_[breaks, len(slashes) - 1]]
    return lasts[(lasts - firsts) % 2 == 0] + 1


def _in_runs(blob: bytes, at: np.ndarray, depth: np.ndarray, opens: np.ndarray, k: int) -> bool:
    """Whether the container holding bracket ``k`` is an item of the document's ``runs``
    (the last bracket before it that opened depth 2 is the ``[`` of ``"runs":``)."""
    outer = np.flatnonzero((depth[:k] == 2) & opens[:k])
    if not len(outer):
        return False
    pos = int(at[outer[-1]])
    return blob[pos : pos + 1] == b"[" and _RUNS.search(blob[max(0, pos - 64) : pos]) is not None
