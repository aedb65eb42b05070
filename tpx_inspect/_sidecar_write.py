"""The ``.npz`` sidecar of a trace as :func:`tpx_inspect.save` writes it: the kept values'
arrays (one buffer per dtype, an index, the shapes) and the members, packed, hashed and
written on a thread while the JSON is made (``format._save``).

>>> import numpy as np, zipfile, io
>>> arrays = {}
>>> values_arrays([np.ones((2, 2), np.float32), np.zeros(3, np.float32)], arrays)
>>> arrays["values.index"].tolist()
[[0, 0, 4, 2], [0, 4, 3, 1]]
>>> sorted(zipfile.ZipFile(io.BytesIO(npz_bytes(arrays))).namelist())[:2]
['values.0.npy', 'values.dtypes.npy']
"""

from __future__ import annotations

import hashlib
import io
import queue
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import chain, compress
from operator import attrgetter
from typing import Any

import numpy as np

from tpx_inspect._util import replace_file
from tpx_inspect._zip_write import FLUSH, Buffer, NeedsZip64, zip_parts, zip_stream
from tpx_inspect.tables import PackedValues

__all__ = ["SidecarWrite", "npy_bytes", "npy_parts", "npz_bytes", "npz_parts", "packed_arrays",
           "values_arrays"]  # fmt: skip


class SidecarWrite:
    """The sidecar packed (:func:`npz_parts`), hashed and written to ``side`` on a thread (on
    the caller's when no thread is to be had) while the caller makes the rest of the trace:
    copies, deflate, CRC-32, SHA-256 and the file write release the GIL. Each member is
    written as soon as it and those before it are packed (``_zip_write.zip_stream``).

    The members are given in one or more :meth:`add` calls, the last one with ``last=True``,
    and written in that order (each call's by name): the thread packs and writes the first
    ones while the caller makes the others (a save gives the run tables first, then the
    previews and the kept values). :meth:`result` waits and
    gives the document's ``"sidecar"`` fields, or raises what the thread raised; a writer
    abandoned before its last members (:meth:`abandon`) writes nothing."""

    def __init__(self, side: str, compress: bool | None) -> None:
        self._side, self._compress = side, compress
        self._given: queue.SimpleQueue = queue.SimpleQueue()
        self._names: set[str] = set()
        self._out: dict[str, Any] | BaseException | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._run, name="tpx_inspect sidecar write"
        )
        try:
            self._thread.start()
        except RuntimeError:  # NOTE: interpreter shutdown or the system's thread limit
            self._thread = None

    def add(self, arrays: dict[str, np.ndarray], last: bool = False) -> None:
        """Members to write after those given before, in the order of their names."""
        names = sorted(arrays)
        assert self._names.isdisjoint(names), sorted(self._names.intersection(names))
        self._names.update(names)
        for k in names:
            self._given.put((k, arrays[k]))
        self._given.put(FLUSH)  # NOTE: written while the caller makes the next ones
        if last:
            self._given.put(_END)
            if self._thread is None:
                self._run()

    def abandon(self) -> None:
        """Stop: the caller failed before its last members; nothing is written."""
        self._given.put(_ABANDON)
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        try:
            members = _npy_members(_taken(self._given))
            self._out = _write(self._side, zip_stream(members, self._compress))
        except BaseException as e:  # NOTE: raised again by result(), on the caller's thread
            self._out = e

    def result(self) -> dict[str, Any]:
        """The sidecar's size and SHA-256 once it is written."""
        if self._thread is not None:
            self._thread.join()
        if isinstance(self._out, BaseException):
            raise self._out
        assert self._out is not None
        return self._out


def _write(side: str, parts: Iterator[Buffer]) -> dict[str, Any]:
    """Write ``parts`` to ``side``, replaced whole (the archive of :class:`NeedsZip64`
    instead when the stream raises it); their size and SHA-256."""
    try:
        return _hash_while_writing(side, parts)
    except NeedsZip64 as e:  # NOTE: the file written so far was removed by replace_file
        return _hash_while_writing(side, iter([e.archive]))


def _hash_while_writing(side: str, parts: Iterator[Buffer]) -> dict[str, Any]:
    """The size and SHA-256 of ``parts`` (~55 MB at 100k nodes, never joined), each hashed
    here as it comes while another thread writes it to ``side`` (both release the GIL);
    written here after the hash when no thread is to be had."""
    digest, size = hashlib.sha256(), 0
    given: queue.SimpleQueue = queue.SimpleQueue()
    with ThreadPoolExecutor(1) as pool:
        try:
            written = pool.submit(replace_file, side, _taken(given))
        except RuntimeError:
            written = None
        kept: list[Buffer] = []
        try:
            for part in _slices(parts):
                digest.update(part)
                size += len(part)
                if written is None:
                    kept.append(part)
                else:
                    given.put(part)
        except BaseException:
            given.put(_ABANDON)  # NOTE: the writer stops and removes its temporary file
            raise
        given.put(_END)
        if written is None:
            replace_file(side, kept)
        else:
            written.result()
    return {"bytes": size, "sha256": digest.hexdigest()}


def _slices(parts: Iterator[Buffer]) -> Iterator[Buffer]:
    """``parts``, those over :data:`_SLICE` bytes cut into views of at most that: the file
    write of one slice goes on while the next is hashed (a 26 MB member of kept values was
    hashed whole, then written whole)."""
    for part in parts:
        if len(part) <= _SLICE:
            yield part
            continue
        view = memoryview(part)
        yield from (view[i : i + _SLICE] for i in range(0, len(view), _SLICE))


_SLICE = 1 << 22


def _taken(given: queue.SimpleQueue) -> Iterator[Any]:
    """The items put in ``given`` until ``_END``; ``_Abandoned`` at ``_ABANDON``."""
    while (item := given.get()) is not _END:
        if item is _ABANDON:
            raise _Abandoned
        yield item


_END, _ABANDON = object(), object()


class _Abandoned(Exception):
    """The caller stopped before giving every member."""


def npz_parts(arrays: dict[str, np.ndarray], compress: bool | None) -> list[Buffer]:
    """The ``.npz`` of ``arrays`` as buffers to write in order (members in sorted order;
    ``compress`` as :func:`save` takes it; see ``_zip_write.zip_parts``)."""
    return zip_parts(_npy_members((k, arrays[k]) for k in sorted(arrays)), compress)


def _npy_members(members: Iterable[Any]) -> Iterator[Any]:
    """``(name + ".npy", parts)`` of each (name, array) of ``members``; FLUSH passed on."""
    for m in members:
        yield (
            m if m is FLUSH else (m[0] + ".npy", npy_parts(m[1], fortran=m[0].endswith(_BY_COLUMN)))
        )


def npz_bytes(arrays: dict[str, np.ndarray], compress: bool | None = None) -> bytes:
    """The ``.npz`` of ``arrays`` in one ``bytes`` (see :func:`npz_parts`)."""
    return b"".join(npz_parts(arrays, compress))


_BY_COLUMN = (".summaries", ".previews", ".unkept_previews")
"""Tables stored column-major (``fortran_order`` in the ``.npy`` header, which ``np.load`` and
the loader honour): a column often holds few distinct values (the 24 + 14 MB of the
100,000-node benchmark chain deflate to 0.2 MB instead of 2 MB and inflate 30% faster), and
the loaded table's columns (what the checks and views read) are contiguous."""


def npy_parts(a: np.ndarray, fortran: bool = False) -> list[Buffer]:
    """The ``.npy`` file of ``a``, as ``np.save`` writes it: its header and ``a``'s bytes (no
    copy when ``a`` is contiguous in the order written); with ``fortran``, a 2-D ``a`` (of
    more than one row and column) is written column-major."""
    assert not a.dtype.hasobject, a.dtype  # NOTE: trace arrays hold numbers and short strings
    by_column = fortran and a.ndim == 2 and min(a.shape) > 1
    # NOTE: the column-major bytes of a are the row-major bytes of a.T
    flat = np.ascontiguousarray(a.T if by_column else a).reshape(-1)
    return [_npy_header(a.dtype, a.shape, by_column), memoryview(flat.view(np.uint8))]


def npy_bytes(a: np.ndarray, fortran: bool = False) -> bytes:
    """The ``.npy`` file of ``a`` in one ``bytes`` (see :func:`npy_parts`)."""
    return b"".join(npy_parts(a, fortran))


def _npy_header(dtype: np.dtype, shape: tuple[int, ...], fortran: bool) -> bytes:
    head = io.BytesIO()
    descr = np.lib.format.dtype_to_descr(dtype)
    np.lib.format.write_array_header_1_0(
        head, {"descr": descr, "fortran_order": fortran, "shape": shape}
    )
    return head.getvalue()


def values_arrays(values: list[np.ndarray], arrays: dict) -> None:
    # NOTE: ~300,000 small values at 100k nodes: three C-speed passes over the list (ndims,
    # dimensions, dtypes) and NumPy over columns. No shape is hashed, and no list of the
    # shapes is kept: each shape tuple is freed as soon as its dimensions are read (a list of
    # 300,000 new tuples cost more than the pass itself)
    n = len(values)
    # NOTE: NumPy arrays have at most 64 dimensions: the counts fit in bytes (a cheap pass)
    ndims = np.frombuffer(bytes(map(_NDIM, values)), np.uint8).astype(np.int64)
    shaped = (ndims > 0).tolist()  # NOTE: 0-d values (a third at 100k nodes) have no dims
    dims = chain.from_iterable(map(_SHAPE, compress(values, shaped)))
    flat = np.fromiter(dims, np.int64, int(ndims.sum()))
    sizes = _products(flat, ndims)
    codes, dtypes = _dtype_codes(values, n)
    offsets = np.zeros(n, np.int64)
    for c in range(len(dtypes)):  # NOTE: each value's place in its dtype's buffer
        mine = slice(None) if len(dtypes) == 1 else codes == c
        offsets[mine] = np.cumsum(sizes[mine]) - sizes[mine]
    arrays["values.index"] = np.stack([codes, offsets, sizes, ndims], axis=1)
    arrays["values.shapes"] = flat
    arrays["values.dtypes"] = np.asarray(dtypes, dtype="U8") if dtypes else np.zeros(0, "U8")
    for c, d in enumerate(dtypes):
        mine = values if len(dtypes) == 1 else [values[i] for i in np.flatnonzero(codes == c)]
        arrays[f"values.{c}"] = _flat_concat(mine, np.dtype(d))


def _products(flat: np.ndarray, ndims: np.ndarray) -> np.ndarray:
    """The product of each value's dimensions (value ``i`` has ``ndims[i]`` of them in
    ``flat``, one value after another): its size (1 for a 0-d value)."""
    sizes = np.ones(len(ndims), np.int64)
    shaped = ndims > 0
    if shaped.any():  # NOTE: their dims start at distinct places: one reduceat over them all
        sizes[shaped] = np.multiply.reduceat(flat, (np.cumsum(ndims) - ndims)[shaped])
    return sizes


def _dtype_codes(values: list[np.ndarray], n: int) -> tuple[np.ndarray, list[str]]:
    """Each value's dtype code (its number among the sorted distinct dtype strings), and
    those strings."""
    kinds = list(map(_DTYPE, values))
    if kinds and kinds.count(kinds[0]) == n:  # NOTE: one dtype (most traces): one C pass
        return np.zeros(n, np.int64), [kinds[0].str]
    first = list(dict.fromkeys(kinds))
    dtypes = sorted({d.str for d in first})
    code = {d: dtypes.index(d.str) for d in first}
    return np.fromiter(map(code.__getitem__, kinds), np.int64, n), dtypes


def packed_arrays(store: PackedValues, arrays: dict) -> bool:
    """The ``values.*`` arrays of a loaded store taken as they were loaded, when they are what
    :func:`values_arrays` would write for its values (all kept, in order): no view made, no
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


_DTYPE, _SHAPE, _NDIM = attrgetter("dtype"), attrgetter("shape"), attrgetter("ndim")
