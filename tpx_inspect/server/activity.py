"""When the server is busy answering API requests, so that work done ahead (reading a trace
in the background after its first frame was answered from beside it) waits for a quiet
moment instead of holding the interpreter lock while a person's next requests wait.

Parsing a 100,000-node trace holds the lock for a few hundred milliseconds at a stretch (the
JSON parser is one C call); a search typed right after the first frame, answered from the
fields kept beside the trace in milliseconds, would wait that long behind it. A request that
needs the trace never waits for the quiet: it reads the trace itself.

>>> act = Activity()
>>> act.quiet_for(), act.wait_quiet(0.0, 1.0)
(inf, True)
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["Activity", "Tracked"]


class Activity:
    """API requests in flight and when the last one ended."""

    def __init__(self) -> None:
        self.inflight = 0
        self.last: float | None = None
        self.lock = threading.Lock()

    def begin(self) -> None:
        with self.lock:
            self.inflight += 1

    def end(self) -> None:
        with self.lock:
            self.inflight -= 1
            self.last = time.monotonic()

    def quiet_for(self) -> float:
        """Seconds since the last API request ended with none in flight (0 while one is)."""
        with self.lock:
            if self.inflight:
                return 0.0
            return float("inf") if self.last is None else time.monotonic() - self.last

    def wait_quiet(self, quiet: float, most: float, poll: float = 0.02) -> bool:
        """Wait until no API request has run for ``quiet`` seconds, at most ``most`` seconds;
        False when it never was that quiet."""
        deadline = time.monotonic() + most
        while self.quiet_for() < quiet:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)
        return True


class Tracked:
    """ASGI middleware keeping an :class:`Activity` of the requests under ``/api/``."""

    def __init__(self, app: Any, activity: Activity) -> None:
        self.app, self.activity = app, activity

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith("/api/"):
            await self.app(scope, receive, send)
            return
        self.activity.begin()
        try:
            await self.app(scope, receive, send)
        finally:
            self.activity.end()
