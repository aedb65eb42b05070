"""One graph as file bytes in every export format, for ``tpx-inspect export`` and the server.

DOT, SVG, PNG and PDF come from :mod:`tpx_inspect.export` (SVG/PNG/PDF need Graphviz); JSON is
the trace format holding only that graph (without the values sidecar); ``model-explorer`` is
Model Explorer's graph JSON; ``html`` is one self-contained page (inline SVG, or the DOT
source when Graphviz is missing, plus a table of the nodes) that opens without the server.

>>> import tpx as tp, tpx_inspect
>>> x = tp.ones(2, requires_grad=True)
>>> t = tpx_inspect.trace(lambda: x.exp().sum().backward())
>>> data, media = export_bytes(t, t.graphs[0], "dot")
>>> media, data.startswith(b"digraph")
('text/vnd.graphviz', True)
"""

from __future__ import annotations

import dataclasses
import html
import json
from typing import Any

from tpx_inspect import export
from tpx_inspect.errors import InspectError
from tpx_inspect.export.render import layout
from tpx_inspect.format import to_json
from tpx_inspect.records import Graph, Trace

__all__ = ["EXPORT_FORMATS", "MEDIA_TYPES", "export_bytes", "graph_html_page", "graph_json"]

MEDIA_TYPES = {
    "dot": "text/vnd.graphviz",
    "svg": "image/svg+xml",
    "png": "image/png",
    "pdf": "application/pdf",
    "json": "application/json",
    "model-explorer": "application/json",
    "html": "text/html; charset=utf-8",
}
EXPORT_FORMATS = tuple(MEDIA_TYPES)
"""Every format :func:`export_bytes` writes."""


def graph_json(trace: Trace, graph: Graph) -> dict[str, Any]:
    """The trace-format JSON document of a trace holding only ``graph``, self-contained (its
    arrays inline, no sidecar), so that the exported file loads on its own.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> t = tpx_inspect.trace(lambda: x.exp().sum().backward())
    >>> doc = graph_json(t, t.graphs[0])
    >>> len(doc["runs"]), len(doc["runs"][0]["graphs"])
    (1, 1)
    """
    run = dataclasses.replace(trace.run(graph.run), graphs=(graph,))
    doc, _ = to_json(dataclasses.replace(trace, runs=(run,)), inline=True)
    return doc


def export_bytes(
    trace: Trace, graph: Graph, fmt: str, *, timeout: float = 60.0, require_picture: bool = False
) -> tuple[bytes, str]:
    """``graph`` in format ``fmt`` as ``(bytes, media type)``; raises ``ValueError`` for an
    unknown format and ``tpx_inspect.errors.ExportError`` when Graphviz is missing or slow
    (for ``html`` only with ``require_picture``; else the page shows the DOT source)."""
    if fmt not in MEDIA_TYPES:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "dot":
        data = export.to_dot(graph).encode()
    elif fmt in ("svg", "png", "pdf"):
        data = layout(export.to_dot(graph), fmt, timeout=timeout)
    elif fmt == "json":
        data = _dumps(graph_json(trace, graph))
    elif fmt == "model-explorer":
        data = _dumps(export.to_model_explorer(graph))
    else:
        data = graph_html_page(graph, timeout=timeout, require_picture=require_picture).encode()
    return data, MEDIA_TYPES[fmt]


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=1, sort_keys=True, allow_nan=False, default=str).encode()


def _picture(graph: Graph, timeout: float, require_picture: bool) -> str:
    try:
        svg = layout(export.to_dot(graph), "svg", timeout=timeout).decode()
        return svg[svg.find("<svg") :]
    except InspectError as exc:
        if require_picture:
            raise
        why = html.escape(str(exc).splitlines()[0])
        return f"<p>{why}</p><pre>{html.escape(export.to_dot(graph))}</pre>"


def _row(graph: Graph, i: int) -> str:
    n, st = graph.nodes[i], graph.stats[i]
    cells = [
        n.id, n.title, n.kind, n.scope, "x".join(map(str, n.shape)) or "scalar", n.dtype,
        "" if st.order is None else st.order,
        "" if st.grad is None or st.grad.norm is None else f"{st.grad.norm:.4g}",
        n.saved_bytes, "" if n.source is None else str(n.source),
    ]  # fmt: skip
    return "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"


_HEAD = ("id", "op", "kind", "scope", "shape", "dtype", "order", "grad norm", "saved B", "source")
_STYLE = (
    "body{font:13px system-ui,sans-serif;margin:1em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
    ".graph{overflow:auto;max-height:80vh;border:1px solid #ddd}"
)


def graph_html_page(graph: Graph, *, timeout: float = 60.0, require_picture: bool = False) -> str:
    """One self-contained HTML page of ``graph``: no script, no external resource. Without
    Graphviz (or when its layout times out) the page shows the DOT source, or with
    ``require_picture`` the :class:`~tpx_inspect.errors.ExportError` is raised.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> g = tpx_inspect.trace(lambda: x.exp().sum().backward()).graphs[0]
    >>> page = graph_html_page(g)
    >>> page.startswith("<!DOCTYPE html>"), "http" in page.split("<body>")[0]
    (True, False)
    """
    title = html.escape(f"tpx-inspect: run {graph.run} graph {graph.id} (step {graph.step})")
    head = "".join(f"<th>{h}</th>" for h in _HEAD)
    rows = "\n".join(_row(graph, i) for i in range(len(graph.nodes)))
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head><body>\n<h1>{title}</h1>\n"
        f'<div class="graph">{_picture(graph, timeout, require_picture)}</div>\n'
        f"<h2>Nodes ({len(graph.nodes)})</h2>\n<table><thead><tr>{head}</tr></thead><tbody>\n"
        f"{rows}\n</tbody></table>\n</body></html>\n"
    )
