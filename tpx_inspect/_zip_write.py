"""The sidecar's zip archive written with its members deflated on threads at once.

``zipfile`` deflates one member after the other; zlib releases the GIL while it deflates, so
the members of a large sidecar (a 100,000-node trace captured with ``values="small"``: about
90 MB of tables and values) are deflated here on a few threads at once, and the archive is
put together from the results. The bytes are those ``zipfile.ZipFile.writestr`` writes for
the same members, level and dates (no data descriptor, no extra fields, Unix attributes
0o600): tests/inspect/test_zip_write.py compares both. An archive that would need ZIP64
records (members or offsets past 2 GiB, 65,535 members) is left to ``zipfile``.

>>> import io, zipfile
>>> blob = zip_bytes([("a.npy", b"x" * 100), ("b.npy", b"")], compress=True)
>>> zipfile.ZipFile(io.BytesIO(blob)).read("a.npy") == b"x" * 100
True
"""

from __future__ import annotations

import io
import os
import struct
import sys
import zipfile
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["zip_bytes"]

DATE = (1980, 1, 1, 0, 0, 0)
"""The date of every member: the archive of a trace depends on its content only."""
LEVEL = 1
"""zlib level of the deflated members (fast; the tables deflate well even so)."""

_LOCAL = struct.Struct("<4s2B4HL2L2H")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_END = struct.Struct("<4s4H2LH")
_VERSION = 20  # NOTE: zipfile's DEFAULT_VERSION, what it writes for stored and deflated members
_SYSTEM = 0 if sys.platform == "win32" else 3  # NOTE: as zipfile.ZipInfo sets it
_ATTR = 0o600 << 16  # NOTE: what writestr gives a member without attributes
_SMALL = 1 << 16  # NOTE: members smaller than this are deflated on the caller's thread
_LIMIT = (1 << 31) - 1  # NOTE: zipfile.ZIP64_LIMIT
_TIME = DATE[3] << 11 | DATE[4] << 5 | DATE[5] // 2  # NOTE: MS-DOS time and date
_DATE = (DATE[0] - 1980) << 9 | DATE[1] << 5 | DATE[2]
Member = tuple[str, "bytes | bytearray | memoryview"]


def zip_bytes(members: Iterable[Member], compress: bool) -> bytes:
    """The zip archive of ``members`` ((name, data) in their order), deflated at
    :data:`LEVEL` with ``compress``, else stored; as ``zipfile`` writes it. Each large member
    is deflated on a thread as soon as ``members`` gives it (its data is made meanwhile)."""
    names: list[str] = []
    packed: list = []
    total = 0
    with ThreadPoolExecutor(min(4, os.cpu_count() or 1)) as pool:
        for name, data in members:
            names.append(name)
            total += len(data)
            packed.append(_pack_soon(pool, data, compress))
        parts = [p if isinstance(p, tuple) else p.result() for p in packed]
    if len(names) >= 0xFFFF or total * 1.05 > _LIMIT:
        return _by_zipfile(names, [_unpack(p) for p in parts], compress)  # ZIP64 records
    return _archive(names, parts, compress)


def _pack_soon(pool: ThreadPoolExecutor, data: Any, compress: bool) -> Any:
    """The packed member of ``data``, or a future of it when it is large and a thread is to
    be had (none at interpreter shutdown or past the system's thread limit: then here)."""
    if len(data) >= _SMALL:
        try:
            return pool.submit(_pack, data, compress)
        except RuntimeError:
            pass
    return _pack(data, compress)


def _pack(
    data: bytes | bytearray | memoryview, compress: bool
) -> tuple[bytes | memoryview, int, int]:
    """(stored bytes, CRC-32, size) of one member."""
    crc = zlib.crc32(data)
    if not compress:
        return memoryview(data), crc, len(data)
    z = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)  # NOTE: zipfile's raw deflate stream
    return z.compress(data) + z.flush(), crc, len(data)


def _archive(names: list[str], parts: list, compress: bool) -> bytes:
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    out: list[bytes | memoryview] = []
    central: list[bytes] = []
    offset = 0
    for name, (stored, crc, size) in zip(names, parts):
        raw = name.encode("ascii")
        common = (method, _TIME, _DATE, crc, len(stored), size, len(raw))
        out += [_LOCAL.pack(b"PK\003\004", _VERSION, 0, 0, *common, 0), raw, stored]
        central += [
            _CENTRAL.pack(b"PK\001\002", _VERSION, _SYSTEM, _VERSION, 0, 0, *common, 0, 0, 0, 0,
                          _ATTR, offset), raw,
        ]  # fmt: skip
        offset += _LOCAL.size + len(raw) + len(stored)
    directory = b"".join(central)
    end = _END.pack(b"PK\005\006", 0, 0, len(names), len(names), len(directory), offset, 0)
    return b"".join([*out, directory, end])


def _unpack(part: tuple) -> bytes:
    """The data of a packed member (the rare ZIP64 archive is written again by zipfile)."""
    stored, _, _ = part
    return zlib.decompress(stored, -15) if not isinstance(stored, memoryview) else bytes(stored)


def _by_zipfile(names: list[str], datas: list[bytes], compress: bool) -> bytes:
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method, compresslevel=LEVEL) as z:
        for name, data in zip(names, datas):
            info = zipfile.ZipInfo(name, DATE)
            info.compress_type = method
            z.writestr(info, data, compresslevel=LEVEL)
    return buf.getvalue()
