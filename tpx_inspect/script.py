"""Run a Python script the way ``python SCRIPT ARGS`` would, inside the current process.

Used by ``tpx-inspect run``: the caller owns the capture, so that a server started beside it
(``run --serve``) sees every graph as the script records it. ``sys.argv``, ``sys.path[0]``
and ``__main__`` are set as the interpreter sets them and restored afterwards, and so is the
working directory (a script may change it; the caller's paths stay valid). Under a
:class:`TerminationGuard`, SIGTERM and SIGHUP end the script as an exception would, so that
the caller saves what was recorded before the process ends with the signal.

>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "hello.py").write_text("import sys\\nraise SystemExit(len(sys.argv))\\n")
>>> import tpx_inspect
>>> run_captured(tpx_inspect.Capture(), d / "hello.py", ["a", "b"]).exit_code
3
"""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ScriptError", "ScriptResult", "Terminated", "TerminationGuard", "check_script",
    "run_captured",
]  # fmt: skip


class ScriptError(ValueError):
    """The path given as a script is missing or is not a Python file.

    >>> check_script("no/such/file.py")
    Traceback (most recent call last):
    ...
    tpx_inspect.script.ScriptError: script not found: no/such/file.py
    """


@dataclass(frozen=True)
class ScriptResult:
    """How a script ended: its exit code and, when it raised, the exception's one-line text
    and what the interpreter would have printed to stderr (the traceback).

    >>> ScriptResult(0).ok
    True
    """

    exit_code: int
    error: str | None = None
    traceback: str | None = None
    signal: int | None = None
    """The signal (SIGTERM, SIGHUP) that ended the script under a :class:`TerminationGuard`."""

    @property
    def ok(self) -> bool:
        """True when the script exited with code 0."""
        return self.exit_code == 0


class Terminated(BaseException):
    """SIGTERM or SIGHUP reached the process while a script ran under a
    :class:`TerminationGuard`: raised in the main thread, so the script unwinds (its
    ``finally`` blocks run, the capture records the error) as for ``KeyboardInterrupt``.

    >>> Terminated(15).signum
    15
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {_signal_name(signum)}")
        self.signum = signum


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


_TERMINATING = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class TerminationGuard:
    """A context manager: inside, SIGTERM and SIGHUP raise :class:`Terminated` in the main
    thread; after :meth:`defer` they (and SIGINT) are only noted, so that saving is not cut
    short. On exit the previous handlers come back; :meth:`exit_by_signal` then ends the
    process by the signal that arrived, with the signal's own status. Outside the main
    thread (where Python cannot set handlers) it does nothing.

    >>> with TerminationGuard() as guard:
    ...     guard.defer()
    >>> guard.pending is None
    True
    """

    def __init__(self) -> None:
        self.pending: int | None = None
        self._previous: dict[int, Any] = {}
        self._deferred = False

    def __enter__(self) -> TerminationGuard:
        if threading.current_thread() is threading.main_thread():
            for signum in (*_TERMINATING, signal.SIGINT):
                self._previous[signum] = signal.getsignal(signum)
            for signum in _TERMINATING:
                signal.signal(signum, self._handle)
        return self

    def defer(self) -> None:
        """From now on a terminating signal (SIGINT too) is noted in ``pending``, not raised."""
        self._deferred = True
        for signum in self._previous:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        if self._deferred:
            self.pending = self.pending or signum
            return
        raise Terminated(signum)

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()

    @staticmethod
    def exit_by_signal(signum: int) -> None:
        """End the process by ``signum`` with its default action (status -signum to a parent,
        128+signum in a shell), as if the handler had never been set."""
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # pragma: no cover - the signal ended the process already


def check_script(path: str | os.PathLike[str]) -> Path:
    """Return ``path`` as a :class:`Path` when it names a readable Python source file.

    A ``.py`` suffix is required, or a first line that is a ``python`` shebang.
    """
    p = Path(path)
    if not p.is_file():
        raise ScriptError(f"script not found: {path}")
    if p.suffix != ".py" and not _python_shebang(p):
        raise ScriptError(f"not a Python file: {path} (expected a .py script)")
    try:
        source = p.read_bytes()
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
    if b"\0" in source[:4096]:
        raise ScriptError(f"not a Python file: {path} (binary content)")
    return p


def _python_shebang(p: Path) -> bool:
    try:
        with p.open("rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def run_captured(
    cap: Any, path: str | os.PathLike[str], args: list[str] | tuple[str, ...] = ()
) -> ScriptResult:
    """Run ``path`` as ``__main__`` inside the capture ``cap`` (entered here); never raises.

    ``sys.argv = [path, *args]`` and ``sys.path[0]`` is the script's folder, as for
    ``python SCRIPT ARGS``. ``SystemExit`` gives its code; any other exception is recorded in
    the capture and gives code 1 with its one-line ``error`` and its ``traceback`` (text)
    in the result (``KeyboardInterrupt`` gives 130, :class:`Terminated` 128 + its signal,
    with ``signal`` set). The working directory is restored. Nothing is printed here. Unlike
    ``tpx_inspect.run_script`` the caller owns ``cap``, so a server can read ``cap.trace``
    while the script still runs.
    """
    script = check_script(path)
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(script.resolve().parent))
    cwd = os.getcwd()
    try:
        with cap:
            runpy.run_path(str(script), run_name="__main__")
        return ScriptResult(0)
    except SystemExit as exc:
        return _exit_result(exc.code)
    except KeyboardInterrupt:
        return ScriptResult(130, "KeyboardInterrupt")
    except Terminated as exc:
        return ScriptResult(128 + exc.signum, str(exc), signal=exc.signum)
    except Exception as exc:  # the user's script failed: the caller reports it
        return ScriptResult(1, f"{type(exc).__name__}: {exc}", traceback.format_exc())
    finally:
        sys.argv = saved_argv
        _restore_path(script, saved_path0)
        _restore_cwd(cwd)


def _exit_result(code: object) -> ScriptResult:
    if code is None:
        return ScriptResult(0)
    if isinstance(code, int):
        return ScriptResult(code)
    return ScriptResult(1, str(code), f"{code}\n")  # sys.exit("message"): python prints it


def _restore_path(script: Path, saved_path0: str | None) -> None:
    entry = str(script.resolve().parent)
    if sys.path and sys.path[0] == entry:
        del sys.path[0]
    elif entry in sys.path and entry != saved_path0:
        sys.path.remove(entry)


def _restore_cwd(cwd: str) -> None:
    with contextlib.suppress(OSError):  # the folder is gone: the caller's absolute paths hold
        os.chdir(cwd)
