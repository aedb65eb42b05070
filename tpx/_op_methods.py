"""The ``tpx.Tensor`` shortcuts of the op-spec table's hot methods (``spec.fast``), generated.

Every method of the table is inherited from P10's shared mixin and records through
``__p10_apply__``; the ``fast`` ones here get TPX's direct-recording shortcut as well (see
``tpx._tensor._fast_unary``), the same node as the general path's.

>>> import tpx as tp
>>> x = tp.ones(2, requires_grad=True)
>>> x.tanh().grad_fn.name, tp.Tensor.tanh.__name__
('TanhBackward', 'tanh')
"""

from __future__ import annotations

import p10
from p10._methods import TensorMethods
from p10._ops import SPEC_OF
from tpx._tensor import Tensor, _fast_binary, _fast_unary


def install() -> None:
    """Set the shortcut of every ``fast`` method of the op-spec table on ``tpx.Tensor``."""
    for op, spec in SPEC_OF.items():
        if not spec.fast:
            continue
        make = _fast_unary if spec.arity == 1 else _fast_binary
        for name in spec.methods:
            setattr(Tensor, name, make(op, getattr(p10.Tensor, name), getattr(TensorMethods, name)))


install()
