"""Reading the files of a trace without trusting them: regular files only (a FIFO, a device or
a socket is refused before it is read, so nothing blocks), sizes bounded before anything is
read or decompressed, the sidecar inside the trace's folder, ``.npz`` members parsed by hand
(header, dtype, element count) so that no header can ask for a huge allocation and no pickle
is ever loaded. Every failure is a :class:`TraceFormatError` naming the file.

>>> LoadLimits().max_member_bytes >= 1 << 30
True
"""

from __future__ import annotations

import io
import math
import os
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from tpx_inspect._schema import quote
from tpx_inspect.errors import TraceFormatError

__all__ = ["LoadLimits", "read_npz", "read_regular", "sidecar_file"]

_HEADER_BYTES = 1 << 16
_ALLOWED_KINDS = "biufU"  # no objects (pickles), no void/structured, no datetimes


@dataclass(frozen=True)
class LoadLimits:
    """Sizes a trace may have, checked before anything is read or decompressed (bytes).

    ``max_json_bytes`` bounds the trace JSON, ``max_sidecar_bytes`` the ``.npz`` file,
    ``max_member_bytes`` one array once decompressed and ``max_total_bytes`` all of them.
    ``TPX_INSPECT_MAX_TRACE_BYTES`` in the environment sets the last three at once.

    >>> LoadLimits(max_member_bytes=1 << 20).max_member_bytes
    1048576
    """

    max_json_bytes: int = 1 << 30
    max_sidecar_bytes: int = 4 << 30
    max_member_bytes: int = 1 << 30
    max_total_bytes: int = 4 << 30

    @classmethod
    def from_env(cls) -> LoadLimits:
        """The defaults, with ``TPX_INSPECT_MAX_TRACE_BYTES`` applied when set."""
        text = os.environ.get("TPX_INSPECT_MAX_TRACE_BYTES", "").strip()
        if not text.isdigit():
            return cls()
        n = int(text)
        return cls(max_sidecar_bytes=n, max_member_bytes=n, max_total_bytes=n)


def _fail(path: str, what: str) -> TraceFormatError:
    return TraceFormatError(f"{path}: {what}")


def read_regular(path: str, limit: int, what: str = "trace file") -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)  # NOTE: non-blocking: opening a FIFO must not wait
    except FileNotFoundError:
        raise _fail(path, f"no such {what}") from None
    except OSError as exc:
        raise _fail(
            path, f"cannot open the {what} ({exc.strerror or type(exc).__name__})"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _fail(path, f"the {what} is not a regular file (a FIFO, device or folder)")
        if st.st_size > limit:
            raise _fail(path, f"the {what} has {st.st_size} bytes, more than the limit {limit}")
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            return f.read(limit + 1)
    except OSError as exc:
        raise _fail(
            path, f"cannot read the {what} ({exc.strerror or type(exc).__name__})"
        ) from None
    finally:
        if fd >= 0:
            os.close(fd)


def sidecar_file(trace_path: str, name: str) -> str:
    """The path of the sidecar ``name`` given in ``trace_path``: a plain file name that
    resolves inside the trace's folder (no separators, no ``..``, no link leading out)."""
    if not name or name in (".", "..") or os.path.basename(name) != name or "\\" in name:
        raise _fail(trace_path, f"sidecar.file: {quote(name)} is not a file name in the folder")
    folder = os.path.dirname(os.path.abspath(trace_path))
    path = os.path.join(folder, name)
    real, real_folder = os.path.realpath(path), os.path.realpath(folder)
    if os.path.commonpath([real, real_folder]) != real_folder:
        raise _fail(trace_path, f"sidecar.file: {quote(name)} leads outside the trace's folder")
    return os.path.join(os.path.dirname(trace_path), name)


def read_npz(blob: bytes, path: str, limits: LoadLimits) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` held in ``blob``, sizes checked against ``limits`` first."""
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            infos = z.infolist()
        _check_sizes(infos, path, limits)
        return {info.filename[: -len(".npy")]: _member(blob, info, path) for info in infos}
    except TraceFormatError:
        raise
    except Exception as exc:  # NOTE: zipfile and zlib raise many types for damaged data
        text = quote(str(exc).splitlines()[0] if str(exc) else "", 80)
        raise _fail(path, f"corrupt sidecar ({type(exc).__name__}: {text})") from None


def _check_sizes(infos: list[zipfile.ZipInfo], path: str, limits: LoadLimits) -> None:
    total = 0
    seen = set()
    for info in infos:
        name = info.filename
        if not name.endswith(".npy") or name in seen:
            raise _fail(path, f"corrupt sidecar (member {quote(name)} is not a unique .npy)")
        seen.add(name)
        if info.flag_bits & 0x1:
            raise _fail(path, f"corrupt sidecar (member {quote(name)} is encrypted)")
        if info.file_size > limits.max_member_bytes:
            limit = limits.max_member_bytes
            raise _fail(path, f"sidecar member {quote(name)} holds {info.file_size} bytes "
                              f"uncompressed, more than the limit {limit}")  # fmt: skip
        total += info.file_size
    if total > limits.max_total_bytes:
        raise _fail(path, f"the sidecar holds {total} bytes uncompressed, more than the limit "
                          f"{limits.max_total_bytes}")  # fmt: skip


def _member_bytes(blob: bytes, info: zipfile.ZipInfo, path: str) -> bytes | memoryview:
    """The uncompressed bytes of one member, inflated by one zlib call straight from ``blob``
    (``ZipFile.open().read()`` inflates in chunks and joins them: twice the time at 40 MB)
    or, stored, a view of ``blob``; checked as ``zipfile`` checks them: local header, name,
    size and CRC-32."""
    name, off = quote(info.filename), info.header_offset
    head = blob[off : off + 30]
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise _fail(path, f"corrupt sidecar (member {name}: bad local header)")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    start = off + 30 + name_len + extra_len
    if blob[off + 30 : off + 30 + name_len] != info.orig_filename.encode("utf-8"):
        raise _fail(path, f"corrupt sidecar (member {name}: its two headers differ)")
    raw = memoryview(blob)[start : start + info.compress_size]
    if info.compress_type == zipfile.ZIP_STORED:
        data = raw  # NOTE: no copy: the arrays are views of the blob (see _member)
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        inflate = zlib.decompressobj(-15)
        data = inflate.decompress(raw, info.file_size)
        if inflate.unconsumed_tail or not inflate.eof:
            raise _fail(path, f"corrupt sidecar (member {name} is longer than its header says, "
                              "or cut short)")  # fmt: skip
    else:
        raise _fail(path, f"corrupt sidecar (member {name}: compression {info.compress_type})")
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise _fail(path, f"corrupt sidecar (member {name}: bad CRC-32 or size)")
    return data


def _member(blob: bytes, info: zipfile.ZipInfo, path: str) -> np.ndarray:
    name = quote(info.filename)
    data = _member_bytes(blob, info, path)
    f = io.BytesIO(data[:_HEADER_BYTES])  # NOTE: numpy refuses longer .npy headers anyway
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise _fail(path, f"corrupt sidecar (member {name}: .npy version {version})")
    if dtype.hasobject or dtype.kind not in _ALLOWED_KINDS or dtype.fields:
        raise _fail(path, f"corrupt sidecar (member {name} has dtype {quote(str(dtype))}; "
                          "pickled objects are never loaded)")  # fmt: skip
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes != len(data) - f.tell():
        raise _fail(path, f"corrupt sidecar (member {name}: its header claims {nbytes} bytes, "
                          f"it holds {len(data) - f.tell()})")  # fmt: skip
    a = np.frombuffer(data, dtype, count=math.prod(shape), offset=f.tell())
    if not a.flags.aligned:  # NOTE: a stored member not written aligned (older sidecars)
        a = a.copy()
        a.flags.writeable = False
    return a.reshape(shape, order="F" if fortran else "C")
