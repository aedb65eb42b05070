"""Background jobs for the heavy requests (graph checks, diffs, exports of big graphs): a
bounded pool of worker threads, one job per distinct request (eight clients asking for the
checks of one graph share one run), results kept for later requests, progress and
cooperative cancellation. Requests never run these on the event loop.

>>> pool = JobPool(workers=1)
>>> job = pool.submit(("square", 3), "demo", lambda progress: 3 * 3)
>>> job.future.result(), pool.submit(("square", 3), "demo", lambda p: 0) is job
(9, True)
>>> pool.get(job.id).status
'done'
>>> pool.shutdown()
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cancelled", "Job", "JobPool", "UnknownJob"]


class Cancelled(Exception):
    """Raised inside a job's work by its progress callback once the job was cancelled."""


class UnknownJob(KeyError):
    """A job id the pool does not know (never submitted, or dropped from its history)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown job"


@dataclass
class Job:
    """One unit of background work: its key, kind, progress (0..1) and future."""

    id: str
    key: Hashable
    kind: str
    future: Future = field(repr=False)
    progress: float = 0.0
    note: str = ""
    cancel_requested: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def status(self) -> str:
        """queued, running, done, failed or cancelled."""
        f = self.future
        if f.cancelled() or (f.done() and isinstance(f.exception(), Cancelled)):
            return "cancelled"
        if f.done():
            return "failed" if f.exception() is not None else "done"
        return "running" if f.running() else "queued"

    def report(self, done: float, total: float, note: str = "") -> None:
        """The progress callback handed to the work: records progress, stops if cancelled."""
        if self.cancel_requested.is_set():
            raise Cancelled(f"job {self.id} was cancelled")
        self.progress = 0.0 if total <= 0 else min(1.0, done / total)
        self.note = note


class JobPool:
    """At most ``workers`` jobs run at once; the last ``keep`` jobs stay for lookups."""

    def __init__(self, workers: int = 2, keep: int = 128) -> None:
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="tpx-inspect-job")
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._by_key: dict[Hashable, Job] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.keep = keep

    def submit(self, key: Hashable, kind: str, work: Callable[[Callable[..., None]], Any]) -> Job:
        """The job for ``key``: the existing one unless it failed or was cancelled, else a
        new one running ``work(progress)`` (``progress(done, total, note='')``)."""
        with self._lock:
            job = self._by_key.get(key)
            if job is not None and job.status not in ("failed", "cancelled"):
                self._jobs.move_to_end(job.id)
                return job
            job = Job(f"j{next(self._ids)}", key, kind, Future())
            job.future = self._executor.submit(self._run, job, work)
            self._jobs[job.id] = self._by_key[key] = job
            self._trim()
        return job

    @staticmethod
    def _run(job: Job, work: Callable[[Callable[..., None]], Any]) -> Any:
        job.report(0, 1)
        out = work(job.report)
        job.progress = 1.0
        return out

    def _trim(self) -> None:
        while len(self._jobs) > self.keep:
            _, old = self._jobs.popitem(last=False)
            if self._by_key.get(old.key) is old:
                del self._by_key[old.key]

    def get(self, job_id: str) -> Job:
        """The job ``job_id``; raises :class:`UnknownJob`."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise UnknownJob(f"unknown job {job_id!r}")
        return job

    def cancel(self, job_id: str) -> Job:
        """Cancel a job: dropped if still queued, stopped at its next progress report if
        running; a finished job is left as it is."""
        job = self.get(job_id)
        job.cancel_requested.set()
        job.future.cancel()
        return job

    def shutdown(self) -> None:
        """Stop accepting work; queued jobs are dropped."""
        self._executor.shutdown(wait=False, cancel_futures=True)


def result_of(job: Job) -> Any:
    """The job's result; raises :class:`Cancelled` or the work's own error."""
    try:
        return job.future.result(timeout=0)
    except CancelledError:
        raise Cancelled(f"job {job.id} was cancelled") from None
