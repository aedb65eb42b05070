"""Small helpers shared by capture, the trace format, the CLI and the server."""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

TRACE_FILE = "trace.json"
"""The trace file of a run folder (its sidecar is ``trace.npz``)."""


def trace_path(path: str | os.PathLike[str]) -> Path:
    """The trace file of ``path``: itself when a file, ``path/trace.json`` for a run folder.

    >>> str(trace_path("tpx-runs/mlp")).endswith("trace.json")
    True
    """
    p = Path(path)
    return p / TRACE_FILE if p.is_dir() or not p.suffix else p


@contextmanager
def paused_gc(promote: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small containers.

    Records and JSON hold no reference cycles; without this, parsing or building a
    100,000-node graph spends most of its time in collections that find nothing. With
    ``promote``, the objects made inside go straight to the oldest generation on exit
    (``gc.freeze`` then ``gc.unfreeze``: two list splices) instead of being scanned by the
    young collection that the next allocation starts (0.1-0.3 s for a loaded 100,000-node
    trace); skipped when the program has frozen objects of its own.

    >>> with paused_gc(promote=True):
    ...     gc.isenabled()
    False
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if promote and gc.get_freeze_count() == 0:
            gc.freeze()  # NOTE: every tracked object -> the permanent generation ...
            gc.unfreeze()  # ... -> the oldest generation, unscanned (full collections see it)
        if was:
            gc.enable()


def replace_file(path: str, data: bytes | Sequence[bytes | bytearray | memoryview]) -> None:
    """Write ``data`` (bytes, or buffers written one after the other) to ``path`` through a
    temporary file renamed over it (``os.replace``).

    A reader, or a process killed at any moment, then finds the previous complete file or the
    new one, never a half-written one; a failed write (disk full) leaves the old file alone.
    On POSIX the replaced file is held open across the rename and closed on a thread: freeing
    a large file's pages is not the caller's wait.

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> replace_file(p, b"one"); replace_file(p, b"two"); open(p).read()
    'two'
    """
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    old = None
    try:
        with open(tmp, "wb") as f:
            f.writelines([data] if isinstance(data, bytes) else data)
        old = _held(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        if old is not None:
            _close_soon(old)


_HOLD = os.name == "posix"
"""Whether :func:`replace_file` holds the replaced file open across the rename (POSIX only:
on Windows an open file cannot be replaced)."""


def _held(path: str) -> int | None:
    """A descriptor of the file at ``path`` (None: none there, or not POSIX): the rename then
    only unlinks it, and dropping its pages (a 54 MB sidecar: 30-230 ms on ext4 mounted with
    ``discard``) waits for the close, which :func:`_close_soon` does on a thread."""
    if not _HOLD:
        return None
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # NOTE: a FIFO does not block
    except OSError:
        return None


def _close_soon(fd: int) -> None:
    """Close ``fd`` on a thread of its own (here when no thread is to be had)."""
    try:
        threading.Thread(target=os.close, args=(fd,), name="tpx_inspect close").start()
    except RuntimeError:  # NOTE: interpreter shutdown or the system's thread limit
        os.close(fd)


def describe(fn: object) -> str:
    """``module:qualname`` of a function: how traces and A/B reports name a rule or kernel
    (the same form as the names TPX gives its overrides).

    >>> describe(describe)
    'tpx_inspect._util:describe'
    """
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module}:{name}"
