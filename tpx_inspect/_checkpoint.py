"""Checkpoints of a running capture: when one is due, and the names of its sidecars."""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from tpx_inspect.format import save


def checkpoint_sidecar(path: str, k: int) -> str:
    """The sidecar of checkpoint ``k``: two names alternate (see ``Capture._write_checkpoint``).

    >>> checkpoint_sidecar("run.json", 3)
    'run.checkpoint-1.npz'
    """
    stem = path[: -len(".json")] if path.endswith(".json") else path
    return f"{stem}.checkpoint-{k % 2}.npz"


class CheckpointClock:
    """When a checkpoint is due: after every kept step while checkpoints have taken at most
    a second plus a quarter of the run's time, so that a run keeping thousands of steps
    (each checkpoint rewrites the whole trace) slows down by a quarter at most; past that
    budget a step's checkpoint is skipped until the time spent is back within it.

    >>> clock = CheckpointClock(); clock.due()
    True
    """

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.spent = 0.0
        self.count = 0
        self._began = 0.0

    def due(self) -> bool:
        self._began = time.perf_counter()
        return self.spent <= 1.0 + 0.25 * (self._began - self.start)

    def done(self) -> None:
        self.spent += time.perf_counter() - self._began
        self.count += 1


def write_checkpoint(trace: Any, path: str, clock: CheckpointClock) -> str | None:
    """Write ``trace`` to the checkpoint ``path`` (its ``due()`` asked already); the error of
    a failed write as text (the script goes on), else None."""
    # NOTE: the two sidecar names alternate, so the sidecar written is never the one that
    # the JSON on disk (the previous checkpoint) reads until the JSON itself is replaced
    side = checkpoint_sidecar(path, clock.count)
    error = None
    try:
        save(trace, path, sidecar=os.path.basename(side), compress=False)
    except Exception as exc:  # disk full, folder gone, ...: the script goes on
        error = f"{type(exc).__name__}: {exc}"
    clock.done()
    return error


def drop_checkpoint_sidecars(checkpoint: str, path: str) -> None:
    """Remove the checkpoint's sidecars once a save to ``path`` replaced the checkpoint."""
    if os.path.abspath(path) == os.path.abspath(checkpoint):
        for k in range(2):
            with contextlib.suppress(OSError):
                os.unlink(checkpoint_sidecar(checkpoint, k))
