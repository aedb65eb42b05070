"""One view model of a captured graph for the server, the viewer and every export.

:func:`build` gives the hierarchy (scopes, folded repeats "xN", loops found in unscoped code,
parameters inside the scope that uses them) with stable box ids; :func:`layout` lays out an
expansion state, one cached layout per group composed into frames; :mod:`.wire` shapes it as
the HTTP API's JSON; :mod:`.values` computes heatmaps, histograms and colour statistics.

>>> import tpx as tp, tpx_inspect
>>> x = tp.ones(2, requires_grad=True)
>>> vm = build(tpx_inspect.trace(lambda: (x * 2).sum().backward()).graphs[0])
>>> [b.id for b in layout(vm, vm.default_expanded).boxes]
['n0', 'n1', 'n2']
"""

from tpx_inspect.viewmodel.layout import Box, Edge, Frame, Layout, layout
from tpx_inspect.viewmodel.tree import Group, ViewModel, build

__all__ = ["Box", "Edge", "Frame", "Group", "Layout", "ViewModel", "build", "layout"]
