"""The arrays of a trace read: its ``.npz`` sidecar checked against the size and SHA-256 the
document records and unpacked without trusting it (``_safe_read``), on a thread while the
document is checked (:class:`SidecarRead`), or the inline ``"arrays"`` of a one-file export.

>>> read_inline({"a": {"dtype": "<f4", "shape": [2], "data": [1.5, "nan"]}}, "t.json")["a"]
array([1.5, nan], dtype=float32)
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from typing import Any

import numpy as np

from tpx_inspect._safe_read import LoadLimits, read_npz, read_regular, sidecar_file
from tpx_inspect._schema import quote
from tpx_inspect.errors import TraceFormatError

__all__ = ["Prefetch", "SidecarRead", "read_inline", "read_sidecar", "sidecar_bytes"]


class Prefetch:
    """The bytes and SHA-256 of the file ``side`` (a trace's usual sidecar), read on a thread
    while the trace's JSON is read and parsed; only a cache: :func:`sidecar_bytes` takes them
    when the document names that very file, with every check made as on a plain read (size,
    hash), and reads the file itself otherwise. Nothing it meets is raised (a missing file, a
    FIFO, a link out of the folder): the plain read then says it, in its order."""

    def __init__(self, path: str, side: str, limits: LoadLimits) -> None:
        self._args = (path, side, limits)
        self._out: tuple[str, bytes, str] | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._run, name="tpx_inspect sidecar prefetch", daemon=True
        )
        try:
            self._thread.start()
        except RuntimeError:  # NOTE: no thread to be had: nothing prefetched
            self._thread = None

    def _run(self) -> None:
        path, side, limits = self._args
        try:
            side = sidecar_file(path, os.path.basename(side))
            blob = read_regular(side, limits.max_sidecar_bytes, "sidecar")
            self._out = (side, blob, hashlib.sha256(blob).hexdigest())
        except BaseException:  # NOTE: see the class docstring
            self._out = None

    def take(self, side: str) -> tuple[bytes, str] | None:
        """The bytes and SHA-256 of ``side`` if they were prefetched (once)."""
        if self._thread is not None:
            self._thread.join()
        out, self._out = self._out, None
        return (out[1], out[2]) if out is not None and out[0] == side else None


def read_sidecar(
    path: str, doc: dict, limits: LoadLimits, prefetch: Prefetch | None = None
) -> dict[str, np.ndarray]:
    return read_npz(*sidecar_bytes(path, doc, limits, prefetch), limits)


def sidecar_bytes(
    path: str, doc: dict, limits: LoadLimits, prefetch: Prefetch | None = None
) -> tuple[bytes, str]:
    """The bytes of the sidecar of the trace ``path`` (document ``doc``) and its path, checked
    against the size and SHA-256 the document records; :class:`TraceFormatError` if missing,
    too big or not the one the trace was saved with. ``prefetch``: the bytes read already,
    if they are that file's."""
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
    got = prefetch.take(side) if prefetch is not None else None
    if got is None:
        blob = read_regular(side, limits.max_sidecar_bytes, "sidecar")
        got = blob, hashlib.sha256(blob).hexdigest()
    blob, digest = got
    if len(blob) != info["bytes"] or digest != info["sha256"]:
        raise TraceFormatError(
            f"{side}: the sidecar does not match its trace ({len(blob)} bytes, expected "
            f"{info['bytes']}; truncated, corrupt or from another capture)"
        )
    return blob, side


class SidecarRead:
    """The sidecar of a trace read, hashed and unpacked on a thread while the main thread
    checks the document against the schema: zlib, SHA-256 and CRC-32 release the GIL, so on a
    second core the sidecar costs no wall time. The thread runs the same function as a plain
    read (``read_sidecar``) on the not yet checked document; its answer (arrays, or the
    TraceFormatError) is used only once the document passed the schema, where a plain read
    would have started, so the errors and their order are those of a plain read. Anything
    else it raised (a field of the wrong type, which the schema refuses first) is forgotten,
    and the sidecar read again on the caller's thread."""

    def __init__(
        self, path: str, doc: dict, limits: LoadLimits, prefetch: Prefetch | None = None
    ) -> None:
        self._args = (path, doc, limits)
        self._prefetch = prefetch
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
            blob, side = sidecar_bytes(*self._args, self._prefetch)
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
            return read_sidecar(*self._args)
        ok, value = self._out
        if ok:
            return value
        raise value

    def cancel(self) -> None:
        """Stop before unpacking (when the document was refused) and wait for the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def read_inline(arrays: dict, path: str) -> dict[str, np.ndarray]:
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
