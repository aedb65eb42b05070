"""TPX's public observer API: what an inspector (``tpx_inspect``) may use, and nothing else.

An observer is an object registered with :func:`add_observer`; it receives the events of
:data:`EVENTS` (see :func:`add_observer` for their arguments). The accessors below answer
what the events' arguments do not say directly: which node a tensor's gradient starts or
ends at, whether hooks run before a node, which :class:`tpx.Function` recorded a node, and the
backend array behind a tensor. They read TPX's internals so that an observer never has to:
when the engine changes, they change with it.

>>> import tpx as tp
>>> from tpx import observe
>>> x = tp.ones(2, requires_grad=True)
>>> observe.grad_node(x).name, observe.grad_node(x * 2).name
('AccumulateGrad', 'MulBackward')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import p10
from tpx._function import Function
from tpx._graph import AccumulateGrad, GradFn, Node
from tpx._observers import EVENTS, BackwardInfo, add_observer, normalized
from tpx._tensor import Tensor

__all__ = [
    "EVENTS",
    "BackwardInfo",
    "add_observer",
    "function_class",
    "function_classes",
    "function_op",
    "grad_inputs",
    "grad_node",
    "has_pre_hooks",
    "native",
    "natives",
    "p10_tensor",
]


def grad_node(tensor: Tensor) -> Node:
    """The node a backward from (or ``tpx.grad`` to) ``tensor`` starts at: its ``grad_fn``, or
    for a leaf that requires grad its ``AccumulateGrad`` (the same object every time while the
    tensor lives).

    >>> import tpx as tp
    >>> x = tp.ones(1, requires_grad=True)
    >>> grad_node(x) is grad_node(x)
    True
    """
    if not tensor.requires_grad:
        raise ValueError(f"grad_node: a tensor of shape {tensor.shape} that does not require grad")
    return tensor.grad_fn if tensor.grad_fn is not None else tensor._accumulator()


def grad_inputs(node: Node, returned: tuple, create_graph: bool = False) -> tuple:
    """What ``on_node_executed`` tells of the gradients that ``node``'s rule ``returned`` (an
    ``on_nodes_executed`` batch may hold them as returned): None for an input that needs none,
    else its P10 value (under ``create_graph``, of the pass: a TPX tensor). Values already so
    are kept as they are.

    >>> import tpx as tp
    >>> y = tp.ones(2, requires_grad=True) * tp.ones(2)  # the second input needs no gradient
    >>> [type(v).__name__ for v in grad_inputs(grad_node(y), (tp.ones(2), p10.ones(2)))]
    ['Tensor', 'NoneType']
    >>> grad_inputs(grad_node(y), (None, None))
    (None, None)
    """
    return normalized(node.edges, returned, create_graph)


def has_pre_hooks(node: Node) -> bool:
    """Whether a hook may replace the gradient that reaches ``node`` before its rule runs (or,
    for a leaf, before it is summed into ``.grad``): pre-hooks of the node, hooks of the tensor
    it produced (``Tensor.register_hook``), or hooks of the leaf.

    >>> import tpx as tp
    >>> x = tp.ones(1, requires_grad=True)
    >>> has_pre_hooks(grad_node(x))
    False
    >>> _ = x.register_hook(lambda g: g * 2)
    >>> has_pre_hooks(grad_node(x))
    True
    """
    if node._pre_hooks or node.tensor_hooks:
        return True
    if isinstance(node, AccumulateGrad):
        extra = node.variable._rare_attrs
        return bool(extra and extra.get("hooks"))
    return False


def function_op(cls: type) -> p10.CustomOp | None:
    """The op that nodes recorded by the ``tpx.Function`` subclass ``cls`` carry (``None`` for
    :class:`tpx.Function` itself).

    >>> import tpx as tp
    >>> class Twice(tp.Function):
    ...     @staticmethod
    ...     def forward(ctx, x): return x * 2
    ...     @staticmethod
    ...     def backward(ctx, g): return g * 2
    >>> function_op(Twice).value, function_op(tp.Function)
    ('Twice', None)
    """
    return cls.__dict__.get("_op")


def function_classes() -> dict[str, type]:
    """Every ``tpx.Function`` subclass defined so far, by its op name (the first defined wins).

    >>> import tpx as tp
    >>> class Thrice(tp.Function):
    ...     @staticmethod
    ...     def forward(ctx, x): return x * 3
    ...     @staticmethod
    ...     def backward(ctx, g): return g * 3
    >>> function_classes()["Thrice"] is Thrice
    True
    """
    found: dict[str, type] = {}
    stack = list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        op = function_op(cls)
        if op is not None:
            found.setdefault(op.value, cls)
        stack.extend(cls.__subclasses__())
    return found


def function_class(node: Node) -> type | None:
    """The ``tpx.Function`` subclass that recorded ``node``, or ``None`` for a built-in op.

    >>> import tpx as tp
    >>> function_class((tp.ones(1, requires_grad=True) * 2).grad_fn) is None
    True
    """
    if not isinstance(node, GradFn) or node.ctx is None:
        return None
    stack = list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        if function_op(cls) is node.op:
            return cls
        stack.extend(cls.__subclasses__())
    return None


def p10_tensor(x: Any) -> Any:
    """The P10 tensor behind a ``tpx.Tensor`` (no copy); anything else is returned as is.

    >>> import tpx as tp
    >>> type(p10_tensor(tp.ones(2))).__name__, p10_tensor(3.0)
    ('Tensor', 3.0)
    """
    return x._value if isinstance(x, Tensor) else x


def native(x: Any) -> Any:
    """The backend's own array behind a ``tpx.Tensor`` or ``p10.Tensor`` (a NumPy array on
    the NumPy backend; no copy, no conversion); anything else is returned as is.

    >>> import tpx as tp
    >>> type(native(tp.ones(2))).__name__
    'ndarray'
    """
    raw = x._value if isinstance(x, Tensor) else x
    return raw._data if isinstance(raw, p10.Tensor) else raw


_P10 = p10.Tensor


def natives(values: Iterable[Any]) -> list[Any]:
    """``[native(x) for x in values]``, without a call per ``p10.Tensor`` or ``None`` (what
    an ``on_nodes_executed`` batch mostly holds).

    >>> import tpx as tp
    >>> [type(a).__name__ for a in natives([p10.ones(2), None, tp.ones(1), 3.0])]
    ['ndarray', 'NoneType', 'ndarray', 'float']
    """
    return [x._data if x.__class__ is _P10 else (x if x is None else native(x)) for x in values]
