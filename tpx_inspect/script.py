"""Run a Python script the way ``python SCRIPT ARGS`` would, inside the current process.

Used by ``tpx-inspect run``: the caller owns the capture, so that a server started beside it
(``run --serve``) sees every graph as the script records it. ``sys.argv``, ``sys.path[0]``
and ``__main__`` are set as the interpreter sets them and restored afterwards; the working
directory is left alone (the interpreter does not change it either).

>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "hello.py").write_text("import sys\\nraise SystemExit(len(sys.argv))\\n")
>>> import tpx_inspect
>>> run_captured(tpx_inspect.Capture(), d / "hello.py", ["a", "b"]).exit_code
3
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ScriptError", "ScriptResult", "check_script", "run_captured"]


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

    @property
    def ok(self) -> bool:
        """True when the script exited with code 0."""
        return self.exit_code == 0


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
    in the result (``KeyboardInterrupt`` gives 130). Nothing is printed here. Unlike
    ``tpx_inspect.run_script`` the caller owns ``cap``, so a server can read ``cap.trace``
    while the script still runs.
    """
    script = check_script(path)
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        with cap:
            runpy.run_path(str(script), run_name="__main__")
        return ScriptResult(0)
    except SystemExit as exc:
        return _exit_result(exc.code)
    except KeyboardInterrupt:
        return ScriptResult(130, "KeyboardInterrupt")
    except Exception as exc:  # the user's script failed: the caller reports it
        return ScriptResult(1, f"{type(exc).__name__}: {exc}", traceback.format_exc())
    finally:
        sys.argv = saved_argv
        _restore_path(script, saved_path0)


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
