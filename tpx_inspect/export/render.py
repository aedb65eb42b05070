"""Layout with the Graphviz binaries, in a subprocess with a timeout."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

from tpx_inspect.errors import ExportError, GraphvizNotFoundError
from tpx_inspect.export.dot import to_dot

if TYPE_CHECKING:
    from tpx_inspect.records import Graph

FORMATS = ("svg", "png", "pdf", "dot")
INSTALL_HINT = (
    "the Graphviz binaries (`dot`) are not installed; install the Debian/Ubuntu package "
    "`graphviz` (apt-get install graphviz) or your system's graphviz package. DOT export "
    "works without them."
)


def graphviz_available(engine: str = "dot") -> bool:
    """Whether the Graphviz layout program ``engine`` is on the PATH."""
    return shutil.which(engine) is not None


def layout(
    source: str, format: str = "svg", *, engine: str = "dot", timeout: float = 60.0
) -> bytes:
    """Run ``engine -T<format>`` on DOT ``source``; raises :class:`GraphvizNotFoundError` or
    :class:`ExportError` (timeout, layout error)."""
    exe = shutil.which(engine)
    if exe is None:
        raise GraphvizNotFoundError(INSTALL_HINT)
    try:
        done = subprocess.run(
            [exe, f"-T{format}"], input=source.encode(), capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise ExportError(
            f"Graphviz {engine} took longer than {timeout:g} s; export the graph folded by scope "
            "with long edges stubbed (fold=True, stub=True, a smaller max_nodes) or raise timeout"
        ) from None
    if done.returncode != 0:
        raise ExportError(
            f"Graphviz {engine} failed: {done.stderr.decode(errors='replace').strip()}"
        )
    return done.stdout


def to_svg(graph: Graph, *, timeout: float = 60.0, **options: Any) -> str:
    """The SVG of ``graph`` (options as for :func:`~tpx_inspect.export.dot.to_dot`)."""
    return layout(to_dot(graph, **options), "svg", timeout=timeout).decode()


def render(
    graph: Graph, path: str, format: str | None = None, *, timeout: float = 60.0, **options: Any
) -> str:
    """Write ``graph`` to ``path`` as DOT/SVG/PNG/PDF (format from the suffix by default).
    DOT needs no binaries; the others need Graphviz. Returns ``path``.

    >>> import os, tempfile, tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> g = tpx_inspect.trace(lambda: x.exp().sum().backward()).graphs[0]
    >>> p = render(g, os.path.join(tempfile.mkdtemp(), "g.dot"))
    >>> open(p).read().startswith("digraph")
    True
    """
    fmt = format or os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    source = to_dot(graph, **options)
    data = source.encode() if fmt == "dot" else layout(source, fmt, timeout=timeout)
    with open(path, "wb") as f:
        f.write(data)
    return path
