"""The sidecar's zip archive: members stored (the default: no copy, each member's data
aligned) or deflated on threads at once.

Stored, an archive is a list of parts (headers and the members' own buffers, no copy) that
the caller hashes and writes one after the other; each member's data starts at a multiple of
:data:`ALIGN` bytes of the file (an alignment extra field, id 0xD935 as Android's
``zipalign`` writes it, pads its local header), so a reader can take the arrays as views of
the file's bytes, as ``torch.load`` maps the uncompressed zip that ``torch.save`` writes.
Deflated, ``zipfile`` would deflate one member after the other; zlib releases the GIL, so
the members are deflated here on a few threads at once and the archive is put together from
the results, byte for byte what ``zipfile.ZipFile.writestr`` writes for the same members,
level and dates (no data descriptor, no extra fields, Unix attributes 0o600). Either way
``zipfile`` and ``numpy.load`` read it (tests/inspect/test_zip_write.py). An archive that
would need ZIP64 records (members or offsets past 2 GiB, 65,535 members) is left to
``zipfile``.

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
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["FLUSH", "NeedsZip64", "zip_bytes", "zip_parts", "zip_stream"]

DATE = (1980, 1, 1, 0, 0, 0)
"""The date of every member: the archive of a trace depends on its content only."""
LEVEL = 1
"""zlib level of the deflated members (fast; the tables deflate well even so)."""
ALIGN = 64
"""Where a stored member's data starts: a multiple of this many bytes (NumPy's own alignment
of an ``.npy`` header, and what ``torch.save`` aligns its records to)."""

_LOCAL = struct.Struct("<4s2B4HL2L2H")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_END = struct.Struct("<4s4H2LH")
_PAD = struct.Struct("<2HH")  # NOTE: zipalign's extra field: id 0xD935, size, alignment
_PAD_ID = 0xD935
_VERSION = 20  # NOTE: zipfile's DEFAULT_VERSION, what it writes for stored and deflated members
_SYSTEM = 0 if sys.platform == "win32" else 3  # NOTE: as zipfile.ZipInfo sets it
_ATTR = 0o600 << 16  # NOTE: what writestr gives a member without attributes
_SMALL = 1 << 16  # NOTE: members smaller than this are deflated on the caller's thread
_LIMIT = (1 << 31) - 1  # NOTE: zipfile.ZIP64_LIMIT
_TIME = DATE[3] << 11 | DATE[4] << 5 | DATE[5] // 2  # NOTE: MS-DOS time and date
_DATE = (DATE[0] - 1980) << 9 | DATE[1] << 5 | DATE[2]
Buffer = bytes | bytearray | memoryview
Member = tuple[str, Buffer | Sequence[Buffer]]
"""A member: its name and its data, one buffer or several written one after the other
(a ``.npy`` header and the array's own bytes: no copy joins them)."""


def zip_bytes(members: Iterable[Member], compress: bool | None) -> bytes:
    """The zip archive of ``members`` ((name, data) in their order) in one ``bytes``: the
    parts of :func:`zip_parts` joined."""
    return b"".join(zip_parts(members, compress))


def zip_parts(members: Iterable[Member], compress: bool | None) -> list[Buffer]:
    """The zip archive of ``members`` ((name, data) in their order), as buffers to write one
    after the other (byte-format: ``len`` is their size): those of :func:`zip_stream`, or
    the one archive of :class:`NeedsZip64`.

    ``compress=True``: every member deflated at :data:`LEVEL` (on a thread as soon as
    ``members`` gives it, its data made meanwhile), the archive what ``zipfile`` writes.
    ``False``: every member stored, its data at a multiple of :data:`ALIGN` bytes and kept as
    given (no copy). ``None``: each member deflated when a sample of it deflates to at most
    :data:`GOOD` of its size (tables of one or two distinct values, which deflate fast),
    else stored (float values and most int tables, which deflate slowly)."""
    try:
        return list(zip_stream(members, compress))
    except NeedsZip64 as e:
        return [e.archive]


class NeedsZip64(Exception):
    """Raised by :func:`zip_stream` for an archive that needs ZIP64 records (members or
    offsets past 2 GiB, 65,535 members), after its members are read: ``archive`` is the
    whole archive as ``zipfile`` writes it, to write instead of the buffers given before."""

    def __init__(self, archive: bytes) -> None:
        super().__init__("the archive needs ZIP64 records")
        self.archive = archive


def zip_stream(members: Iterable[Member | object], compress: bool | None) -> Iterator[Buffer]:
    """The buffers of :func:`zip_parts`, each member's given as soon as it and those before
    it are packed: the caller hashes and writes the first members while the next ones are
    made and deflated (a save's sidecar). ``members`` may hold :data:`FLUSH`: every member
    before it is given (its packing waited for) before the next one is read. Raises
    :class:`NeedsZip64` when the archive turns out to need ZIP64 records (the same test as
    :func:`zip_parts` made before any member was given: the uncompressed sizes)."""
    packed: list[tuple[str, Any]] = []  # NOTE: (name, packed member or its future)
    archive: _Archive | None = _Archive()
    total = 0
    with ThreadPoolExecutor(min(4, os.cpu_count() or 1)) as pool:
        for member in members:
            if member is not FLUSH:
                name, data = member  # type: ignore[misc]
                chunks = _chunks(data)
                total += sum(map(len, chunks))
                packed.append((name, _pack_soon(pool, chunks, compress)))
            if len(packed) >= 0xFFFF or total * 1.05 + ALIGN * len(packed) > _LIMIT:
                archive = None  # NOTE: ZIP64 records: nothing more given; NeedsZip64 at the end
            while archive is not None and archive.count < len(packed):
                if member is not FLUSH and not _done(packed[archive.count][1]):
                    break
                yield from archive.add(*packed[archive.count])
        if archive is None:
            raise NeedsZip64(_by_zipfile([n for n, _ in packed], [_result(p) for _, p in packed]))
        for name, part in packed[archive.count :]:  # NOTE: each as soon as it is packed
            yield from archive.add(name, part)
    yield from archive.end()


FLUSH = object()
"""A mark among :func:`zip_stream`'s members: write those before it now."""


def _done(p: Any) -> bool:
    return isinstance(p, tuple) or p.done()


def _result(p: Any) -> tuple[int, list[Buffer], int, int]:
    return p if isinstance(p, tuple) else p.result()


GOOD = 0.03
"""With ``compress=None``, a member is deflated when a sample of it deflates to at most this
fraction of its size: what zlib deflates that well it deflates fast (~2 ms/MB here), and the
file is far smaller (a trace's statistics without kept values, its value shapes: 0.5%).
Anything else costs more to deflate (6-10 ms/MB for int tables deflating to 8-20%, more for
floats) than to store (SHA-256, write, read: ~2-3 ms/MB): the 100,000-node ``values="small"``
chain saved with 0.25 here deflated its int tables (19 MB) too: 0.59 s CPU instead of 0.45 s
for a 54 MB sidecar instead of 71 MB."""
_SAMPLE = 1 << 18


def _chunks(data: Any) -> list[Buffer]:
    """A member's data as byte-format buffers (a buffer of other items would count them)."""
    seq = [data] if isinstance(data, bytes | bytearray | memoryview) else list(data)
    return [b if isinstance(b, bytes | bytearray) else memoryview(b).cast("B") for b in seq]


def _pack_soon(pool: ThreadPoolExecutor, chunks: list[Buffer], compress: bool | None) -> Any:
    """The packed member of ``chunks``, or a future of it when it is large and a thread is
    to be had (none at interpreter shutdown or past the system's thread limit: then here)."""
    if sum(map(len, chunks)) >= _SMALL:
        try:
            return pool.submit(_pack, chunks, compress)
        except RuntimeError:
            pass
    return _pack(chunks, compress)


def _pack(chunks: list[Buffer], compress: bool | None) -> tuple[int, list[Buffer], int, int]:
    """(method, stored buffers, CRC-32, size) of one member."""
    crc = 0
    for c in chunks:
        crc = zlib.crc32(c, crc)
    size = sum(map(len, chunks))
    if compress is False:
        return zipfile.ZIP_STORED, chunks, crc, size
    z = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)  # NOTE: zipfile's raw deflate stream
    out: list[bytes] = []
    rest = chunks
    if compress is None and size >= _SMALL:
        sample, rest = _split(chunks, _SAMPLE)
        out = list(map(z.compress, sample))
        if not _deflates_well(z, out, min(size, _SAMPLE)):
            return zipfile.ZIP_STORED, chunks, crc, size
    return zipfile.ZIP_DEFLATED, [b"".join([*out, *map(z.compress, rest), z.flush()])], crc, size


def _split(chunks: list[Buffer], n: int) -> tuple[list[Buffer], list[Buffer]]:
    """The first ``n`` bytes of ``chunks`` and the rest, as buffers (views, no copy)."""
    head: list[Buffer] = []
    for i, c in enumerate(chunks):
        if len(c) >= n:
            view = memoryview(c)
            return [*head, view[:n]], [view[n:], *chunks[i + 1 :]]
        head.append(c)
        n -= len(c)
    return head, []


def _deflates_well(z: Any, out: list[bytes], length: int) -> bool:
    """Whether the sample that compressor ``z`` was given (the member's first ``length``
    bytes; ``out`` what it gave back) deflates to at most :data:`GOOD` of its size: a copy of
    ``z`` is flushed, ``z`` goes on with the rest of the member when it does (the sample is
    not deflated twice: zlib's stream does not depend on how its input is cut)."""
    return sum(map(len, out)) + len(z.copy().flush()) <= GOOD * length


class _Archive:
    """The local entries of an archive's members in their order, then its central directory
    and end record."""

    def __init__(self) -> None:
        self.count = 0
        self._offset = 0
        self._central: list[bytes] = []

    def add(self, name: str, part: Any) -> list[Buffer]:
        """The buffers of the next member's local entry (header, name, padding, data), from
        its packed member or the future of it (:func:`_pack_soon`)."""
        method, stored, crc, size = _result(part)
        raw = name.encode("ascii")
        aligned = method == zipfile.ZIP_STORED
        extra = _padding(self._offset + _LOCAL.size + len(raw)) if aligned else b""
        length = sum(map(len, stored))
        common = (method, _TIME, _DATE, crc, length, size, len(raw))
        self._central += [
            _CENTRAL.pack(b"PK\001\002", _VERSION, _SYSTEM, _VERSION, 0, 0, *common, 0, 0, 0, 0,
                          _ATTR, self._offset), raw,
        ]  # fmt: skip
        self._offset += _LOCAL.size + len(raw) + len(extra) + length
        self.count += 1
        return [_LOCAL.pack(b"PK\003\004", _VERSION, 0, 0, *common, len(extra)), raw, extra,
                *stored]  # fmt: skip

    def end(self) -> list[Buffer]:
        """The central directory and the end record."""
        directory = b"".join(self._central)
        n = self.count
        return [directory, _END.pack(b"PK\005\006", 0, 0, n, n, len(directory), self._offset, 0)]


def _padding(start: int) -> bytes:
    """The extra field that moves data starting at ``start`` to the next multiple of
    :data:`ALIGN` (at least its own 6 bytes: id, size, alignment; zeros after them)."""
    pad = _PAD.size + (-(start + _PAD.size)) % ALIGN
    return _PAD.pack(_PAD_ID, pad - 4, ALIGN) + bytes(pad - _PAD.size)


def _by_zipfile(names: list[str], parts: list) -> bytes:
    """The archive as ``zipfile`` writes it, ZIP64 records and all (the rare archive past
    2 GiB: each member's data made again)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, (method, stored, _, _) in zip(names, parts):
            data = b"".join(stored)
            if method == zipfile.ZIP_DEFLATED:
                data = zlib.decompress(data, -15)
            info = zipfile.ZipInfo(name, DATE)
            info.compress_type = method
            z.writestr(info, data, compresslevel=LEVEL)
    return buf.getvalue()
