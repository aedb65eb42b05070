"""Inline display of a captured graph in Jupyter (``Graph._repr_svg_`` / ``_repr_html_``)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from tpx_inspect.errors import ExportError

if TYPE_CHECKING:
    from tpx_inspect.records import Graph

TIMEOUT = 20.0


def graph_svg(graph: Graph) -> str | None:
    """The SVG of ``graph`` when Graphviz is installed and lays it out in time, else None
    (Jupyter then shows :func:`graph_html`)."""
    from tpx_inspect.export.render import graphviz_available, to_svg

    if not graphviz_available():
        return None
    try:
        return to_svg(graph, timeout=TIMEOUT)
    except ExportError:
        return None


def graph_html(graph: Graph) -> str:
    """HTML for ``graph``: the inline SVG, or the DOT source with a note saying why not.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> g = tpx_inspect.trace(lambda: x.exp().sum().backward()).graphs[0]
    >>> graph_html(g).startswith("<div")
    True
    """
    from tpx_inspect.export.render import INSTALL_HINT, graphviz_available

    head = html.escape(repr(graph))
    svg = graph_svg(graph)
    if svg is not None:
        return f"<div><p><code>{head}</code></p>{svg[svg.find('<svg') :]}</div>"
    why = INSTALL_HINT if not graphviz_available() else "the layout took too long"
    dot = graph.to_dot()
    return f"<div><p><code>{head}</code>: {html.escape(why)}</p><pre>{html.escape(dot)}</pre></div>"
