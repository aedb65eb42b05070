"""Optional dependencies: which import comes with which install, and one-line messages that
name it.

``pip install tpx`` brings numpy and scipy: enough for p10, tpx and the tpx_inspect library
(capture, trace format, checks). The ``tpx-inspect`` CLI, the server and the exports need the
``inspect`` extra; SVG/PNG/PDF exports also need the Graphviz binaries (``dot``), which pip
cannot install. tests/packaging checks this table against pyproject.toml.

>>> for part in missing_message(["rich", "uvicorn"]).split("; "):
...     print(part)
tpx-inspect needs the Python packages rich, uvicorn, which are not installed
install them with: pip install "tpx[inspect]"
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from types import ModuleType

from tpx_inspect.errors import MissingDependencyError

__all__ = ["CLI_MODULES", "OPTIONAL", "SPEEDUPS", "missing_message", "missing_modules", "require"]

OPTIONAL: dict[str, tuple[str, str]] = {
    "click": ("click", "inspect"),
    "rich": ("rich", "inspect"),
    "fastapi": ("fastapi", "inspect"),
    "pydantic": ("pydantic", "inspect"),
    "uvicorn": ("uvicorn", "inspect"),
    "graphviz": ("graphviz", "inspect"),
    "h11": ("h11", "inspect"),
    "orjson": ("orjson", "inspect"),
    "array_api_compat": ("array-api-compat", "backends"),
    "array_api_strict": ("array-api-strict", "backends"),
    "dask": ("dask", "backends"),
    "distributed": ("distributed", "backends"),
    "psutil": ("psutil", "backends"),
    "sklearn": ("scikit-learn", "data"),
}
"""Import name -> (distribution, extra of ``tpx`` that installs it)."""

SPEEDUPS = frozenset({"orjson"})
"""Installed with the ``inspect`` extra, but only for speed: without them the standard
library does the same work (``orjson``: the trace JSON, see ``tpx_inspect._json``)."""

CLI_MODULES = tuple(
    m for m, (_, extra) in OPTIONAL.items() if extra == "inspect" and m not in SPEEDUPS
)
"""What ``tpx-inspect`` imports: the ``inspect`` extra, less the :data:`SPEEDUPS`."""


def install_command(modules: Iterable[str]) -> str:
    """The pip command that installs ``modules`` (import names of :data:`OPTIONAL`).

    >>> install_command(["sklearn", "click"])
    'pip install "tpx[data,inspect]"'
    """
    extras = sorted({OPTIONAL[m][1] for m in modules})
    return f'pip install "tpx[{",".join(extras)}]"'


def missing_message(modules: Iterable[str], needed_by: str = "tpx-inspect") -> str:
    """One line saying that ``modules`` are missing and how to install them."""
    modules = list(modules)
    names = ", ".join(OPTIONAL[m][0] for m in modules)
    what = f"package {names}, which is" if len(modules) == 1 else f"packages {names}, which are"
    them = "it" if len(modules) == 1 else "them"
    return (
        f"{needed_by} needs the Python {what} not installed; "
        f"install {them} with: {install_command(modules)}"
    )


def missing_modules(modules: Iterable[str] = CLI_MODULES) -> list[str]:
    """Those of ``modules`` (top-level import names) that cannot be imported.

    >>> missing_modules(["click", "rich"])
    []
    """
    return [m for m in modules if importlib.util.find_spec(m) is None]


def require(module: str, needed_by: str) -> ModuleType:
    """Import the optional ``module``, or raise :class:`MissingDependencyError` naming the pip
    command that installs it.

    >>> require("graphviz", "DOT export").__name__
    'graphviz'
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise MissingDependencyError(missing_message([module], needed_by)) from None


def optional_module_of(exc: ModuleNotFoundError) -> str | None:
    """The :data:`OPTIONAL` module whose absence raised ``exc``, if any.

    >>> optional_module_of(ModuleNotFoundError("no", name="uvicorn.config"))
    'uvicorn'
    """
    top = (exc.name or "").partition(".")[0]
    return top if top in OPTIONAL else None
