"""Small helpers shared by capture and the trace format."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small containers.

    Records and JSON hold no reference cycles; without this, parsing or building a
    100,000-node graph spends most of its time in collections that find nothing.

    >>> with paused_gc():
    ...     gc.isenabled()
    False
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
