"""A capture's registration with TPX: registered while the capture is entered and not paused.

While paused (``Capture.paused``) the capture is none of TPX's observers, so the program runs
at TPX's eager cost (see docs/capture.md, "Pausing", for what crosses a pause).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import tpx


class Attachment:
    """Counts the entries and pauses of one observer; the observer is registered with TPX
    exactly while it is entered and not paused (``active``).

    >>> from tpx import _observers
    >>> class Seen:
    ...     def on_backward_end(self, roots): pass
    >>> a = Attachment(Seen())
    >>> a.enter(), a.active, a.observer in _observers.observers
    (True, True, True)
    >>> a.pause(); a.pause(); a.resume(); a.active, a.observer in _observers.observers
    (False, False)
    >>> a.resume(); a.exit(), a.observer in _observers.observers
    (True, False)
    """

    __slots__ = ("_handle", "entered", "observer", "pauses")

    def __init__(self, observer: Any) -> None:
        self.observer = observer
        self.entered = 0
        self.pauses = 0
        self._handle: Any = None

    @property
    def active(self) -> bool:
        """True while the observer is registered: entered and not paused."""
        return self.entered > 0 and self.pauses == 0

    def enter(self) -> bool:
        """One entry more; True for the first."""
        self.entered += 1
        self._sync()
        return self.entered == 1

    def exit(self) -> bool:
        """One entry less; True for the last."""
        self.entered -= 1
        self._sync()
        return self.entered == 0

    def pause(self) -> None:
        """One pause more (pauses nest: the observer is back when the last one ends)."""
        self.pauses += 1
        self._sync()

    def resume(self) -> None:
        """One pause less."""
        self.pauses -= 1
        self._sync()

    @contextlib.contextmanager
    def paused(self, cannot: Callable[[], str | None]) -> Iterator[None]:
        """Paused inside; ``cannot()`` says why not (None: it can), asked only when entered."""
        why = cannot() if self.entered else "the capture is not active (enter it first)"
        if why is not None:
            raise RuntimeError(f"Capture.paused: {why}")
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def _sync(self) -> None:
        if self.active and self._handle is None:
            self._handle = tpx.add_observer(self.observer)
        elif not self.active and self._handle is not None:
            self._handle.remove()
            self._handle = None
