"""Capturing a whole call or script: :func:`trace` and :func:`run_script`."""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tpx_inspect._policy import DEFAULT_POLICY, Policy
from tpx_inspect.capture import Capture
from tpx_inspect.records import Trace


def trace(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Trace:
    """Call ``fn(*args, **kwargs)`` under a capture that keeps every step; returns the trace
    (with the exception recorded if ``fn`` raised; the exception is not re-raised).

    >>> import tpx as tp, tpx_inspect
    >>> def step(x):
    ...     (x.exp() * 3).sum().backward()
    >>> t = tpx_inspect.trace(step, tp.zeros(2, requires_grad=True))
    >>> [n.op for n in t.graphs[0].nodes]
    [None, 'exp', 'mul', 'sum']
    """
    cap = Capture("all")
    try:
        with cap:
            fn(*args, **kwargs)
    except Exception:
        pass  # recorded in the trace by __exit__
    return cap.trace


@dataclass(frozen=True)
class ScriptResult:
    """What :func:`run_script` produced: the trace, the paths written, the script's error."""

    trace: Trace
    paths: tuple[str, str] | None
    error: BaseException | None
    exit_code: int


def run_script(
    script: str,
    args: Iterable[str] = (),
    *,
    output: str | None = None,
    policy: Policy | str = DEFAULT_POLICY,
    **options: Any,
) -> ScriptResult:
    """Run a Python script as ``__main__`` under capture; always save to ``output`` (when
    given), also when the script raises or calls ``sys.exit``. Never raises the script's
    error: it is returned and recorded in the trace (for the CLI to report).
    """
    # NOTE: a script's threads are part of the run (a capture block's are not, by default)
    options.setdefault("threads", "all")
    cap = Capture(policy, name=os.path.basename(script), **options)
    argv, path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    error: BaseException | None = None
    code = 0
    try:
        with cap:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        error = e if code else None
    except BaseException as e:
        error, code = e, 1
    finally:
        sys.argv = argv
        if sys.path and sys.path[0] != path0:
            sys.path.pop(0)
    failed = cap._settle()  # NOTE: a build deferred to now that fails is the run's error
    if failed and error is None:
        error, code = failed[0], 1
    paths = cap.save(output) if output is not None else None
    return ScriptResult(cap.trace, paths, error, code)


__all__ = ["ScriptResult", "run_script", "trace"]
