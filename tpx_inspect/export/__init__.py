"""Exports of a captured graph: DOT (always), SVG/PNG/PDF through the Graphviz binaries,
inline Jupyter display and Model Explorer's graph JSON."""

from tpx_inspect.export.dot import KIND_COLOURS, STATUS_COLOURS, node_status, to_dot
from tpx_inspect.export.model_explorer import to_model_explorer
from tpx_inspect.export.render import graphviz_available, render, to_svg

__all__ = [
    "KIND_COLOURS", "STATUS_COLOURS", "graphviz_available", "node_status", "render", "to_dot",
    "to_model_explorer", "to_svg",
]  # fmt: skip
