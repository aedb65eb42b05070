"""``tpx-inspect`` and ``python -m tpx_inspect``: the command line (see :mod:`tpx_inspect.cli`).

A missing package of the ``inspect`` extra gives one line naming the pip command and exit code
2, before anything imports click, rich or fastapi.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tpx_inspect._deps import missing_message, missing_modules, optional_module_of

__all__ = ["main"]


def _fail(message: str) -> None:
    sys.stderr.write(f"Error: {message}\n")
    raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``tpx-inspect`` with ``argv`` (default: the command line)."""
    missing = missing_modules()
    if missing:
        _fail(missing_message(missing))
    try:
        from tpx_inspect.cli import cli
    except ModuleNotFoundError as exc:  # installed but broken: a package it needs is gone
        module = optional_module_of(exc)
        if module is None:
            raise
        _fail(missing_message([module]))
    cli.main(args=None if argv is None else list(argv), prog_name="tpx-inspect")


if __name__ == "__main__":
    main()
