"""``tpx.Tensor``: a P10 tensor plus ``requires_grad``, ``grad`` and ``grad_fn``.

Every P10 function dispatches to :func:`apply_op` when one of its inputs is a ``tpx.Tensor``
(P10's ``__p10_apply__`` protocol). The op runs on P10; a GradFn node is recorded only when an
input requires grad and grad mode is on.
"""

from __future__ import annotations

import time
import weakref
from operator import attrgetter
from typing import Any

import numpy as np

import p10
from p10 import Handle, Op
from p10._elementwise import scalar_tensor
from p10._methods import TensorMethods
from p10._tensor import VIEW_OPS, _fast_axes, execute
from tpx import _graph, _mode
from tpx._device import device, device_arg, is_device
from tpx._errors import (
    AnomalyError,
    GradAssignmentError,
    InplaceError,
    MissingRuleError,
    RequiresGradError,
)
from tpx._graph import AccumulateGrad, GradFn, needs_of, shared, shared_meta, user_frame
from tpx._mode import NAN_CHECKS, SAVED_CHECKS, state
from tpx._numpy_interop import NumpyInterop
from tpx._saved_checks import record_checksums
from tpx._torch import dim_kwargs
from tpx._torch_methods import TorchMethods
from tpx.rules import NON_DIFFERENTIABLE, RULES

P = p10.Tensor
M = TensorMethods
_new = object.__new__


def _named(method: Any, slow: Any) -> Any:
    """``method`` (a shortcut) under the name and docstring of ``slow``, the method it speeds up."""
    method.__name__ = slow.__name__
    method.__qualname__ = f"Tensor.{slow.__name__}"
    method.__doc__ = slow.__doc__
    return method


def _fast_binary(op: Op, forward: Any, slow: Any, reflected: Any = None) -> Any:
    """``slow`` (P10's function, which dispatches to :func:`apply_op`) with a shortcut.

    The shortcut takes a TPX tensor or a Python int/float as the other operand. When nothing
    is recorded it runs P10's own operator on the P10 values (``forward``, or ``reflected``
    for ``2 * x``), which is what the general path computes. When a node is recorded and both
    operands share dtype and backend, it runs ``forward`` and records the node directly, the
    same node as the general path's (and emits its observer events). Anything else, and anomaly
    mode, take ``slow``.
    """

    def method(self: Tensor, other: Any) -> Any:
        cls = other.__class__
        if cls is Tensor:
            b = other._t
            needs = self._rg or other._rg
        elif cls is float or cls is int:
            b = other
            needs = self._rg
        else:
            return slow(self, other)
        if needs and state.grad_enabled:
            if state.anomaly:
                return slow(self, other)
            start = time.perf_counter() if _mode.observers else 0.0
            a = self._t
            if cls is not Tensor:
                b = scalar_tensor(b, a)
            if a._backend is not b._backend or (
                a._data.dtype is not b._data.dtype and a.dtype != b.dtype  # identity: cheap
            ):
                return slow(self, other)
            if reflected is not None:  # `2 - x`: the scalar is the left operand
                return _record_fast(op, other, self, b, a, forward(b, a), None, start)
            return _record_fast(op, self, other, a, b, forward(a, b), None, start)
        if state.anomaly:
            return slow(self, other)
        out = reflected(self._t, b) if reflected is not None else forward(self._t, b)
        # NOTE: wrap() inlined: one call less per op in a forward that records nothing
        t = _new(Tensor)
        t._t, t._rg, t._ver = out, False, 0
        t._grad = t.grad_fn = t._accum = t._extra = None
        return t

    return _named(method, slow)


_NEEDS_ONE = (True,)  # a unary shortcut records only for an input that requires grad
_NEEDS_TWO = (((False, False), (False, True)), ((True, False), (True, True)))

# (op, backend, output shape and dtype, then each input's) -> (in_meta, out_meta): the metadata
# of a recorded node, shared by every node with the same key (see tpx._graph.shared). The dtypes
# in the key are the backend arrays' own; the metadata holds P10's.
_node_meta: dict[tuple, tuple] = {}


def _new_meta(key: tuple, raw: tuple | list, out: p10.Tensor) -> tuple:
    """The metadata of ``key`` (not cached yet): computed from the values, then cached."""
    in_meta = shared_meta(tuple([(r._data.shape, r.dtype) for r in raw]))
    meta = (in_meta, shared((out._data.shape, out.dtype)))
    if len(_node_meta) >= 4096:
        _node_meta.clear()  # bounded, as tpx._graph.shared
    _node_meta[key] = meta
    return meta


def _record_fast(
    op: Op,
    x: Any,
    y: Any,
    a: p10.Tensor,
    b: p10.Tensor | None,
    out: Any,
    params: dict | None = None,
    start: float = 0.0,
) -> Any:
    """Record the node of a shortcut operator: ``_record`` written out for one or two inputs
    of one dtype and backend, a floating output, no observer and no anomaly mode (checked by
    the callers). ``x``/``y`` are the TPX tensors or Python scalars, ``a``/``b`` their values
    (``y``/``b`` are None for a unary op). It records the same node as ``_record``."""
    rule = RULES.get(op)
    overrides = state.overrides
    if overrides is not None:
        rule = overrides.rule(op, rule)
    if rule is None:
        inputs, raw = ((x,), (a,)) if b is None else ((x, y), (a, b))
        return _record(op, inputs, raw, params or {}, out, start, skip=2)
    # the edges, _edge() inlined for the common cases
    e0 = e1 = None
    if x.__class__ is Tensor and x._rg:
        e0 = x.grad_fn
        if e0 is None:  # a leaf: its AccumulateGrad, held weakly (see Tensor._accumulator)
            acc = x._accum
            e0 = acc() if acc is not None else None
            if e0 is None:
                e0 = x._accumulator()
        elif x._ver != x._t.version:
            e0 = _edge(x)  # raises, naming the node
    if b is not None and y.__class__ is Tensor and y._rg:
        e1 = y.grad_fn
        if e1 is None:
            acc = y._accum
            e1 = acc() if acc is not None else None
            if e1 is None:
                e1 = y._accumulator()
        elif y._ver != y._t.version:
            e1 = _edge(y)
    ad, od = a._data, out._data
    # NOTE: the backend comes before the backend's dtype objects, so that keys of different
    # backends differ before their dtypes are compared (array-api-strict warns on that)
    if b is None:
        key = (op, a._backend, od.shape, od.dtype, ad.shape, ad.dtype)
    else:
        bd = b._data
        key = (op, a._backend, od.shape, od.dtype, ad.shape, ad.dtype, bd.shape, bd.dtype)
    meta = _node_meta.get(key)
    if meta is None:
        meta = _new_meta(key, (a,) if b is None else (a, b), out)
    # NOTE: GradFn.__init__ written out (one call less per recorded op)
    node = _new(GradFn)
    node.seq = next(_graph._seq)
    node.op = op
    node.params = {} if params is None else params
    node.rule = rule
    if b is None:
        node.edges, node.needs_input_grad = (e0,), _NEEDS_ONE
    else:
        node.edges = (e0, e1)
        node.needs_input_grad = _NEEDS_TWO[e0 is not None][e1 is not None]
    node.in_meta, node.out_meta = meta
    if overrides is not None:
        node.overrides = overrides.mark(op, a._backend)
    save = rule.save
    if save or rule.save_output:
        if b is None:
            saved = (a if save else None, out if rule.save_output else None)
        elif rule.cross:  # each input only for the other's gradient (see Rule.cross)
            saved = (a if e1 is not None else None, b if e0 is not None else None, None)
        else:
            saved = (
                a if 0 in save else None,
                b if 1 in save else None,
                out if rule.save_output else None,
            )
        node.saved = saved
        # NOTE: the output is fresh; inputs without a version counter are at version 0
        if a._vc is None and (b is None or b._vc is None):
            node.versions = _ZEROS[len(saved)]
        else:
            node.versions = _versions(saved)
    scope = state.scope
    if scope:
        node.scope = scope
    node.code, node.lineno = user_frame(1)
    t = _new(Tensor)
    t._t, t._rg, t.grad_fn, t._ver = out, True, node, 0  # a fresh output, version 0
    t._grad = t._accum = t._extra = None
    if _mode.observers:  # the general path's events, with the inputs it would pass
        inputs = (x if x.__class__ is Tensor else a,)
        if b is not None:
            inputs += (y if y.__class__ is Tensor else b,)
        _mode.emit("on_node_recorded", node, t)
        _mode.emit("on_node_forward", node, inputs, t, time.perf_counter() - start)
    return t


def _fast_unary(op: Op, forward: Any, slow: Any) -> Any:
    """``slow`` with a shortcut, as :func:`_fast_binary`."""

    def method(self: Tensor) -> Any:
        if state.anomaly:
            return slow(self)
        a = self._t
        if self._rg and state.grad_enabled:
            start = time.perf_counter() if _mode.observers else 0.0
            return _record_fast(op, self, None, a, None, forward(a), None, start)
        t = _new(Tensor)  # wrap() inlined, as in _fast_binary
        t._t, t._rg, t._ver = forward(a), False, 0
        t._grad = t.grad_fn = t._accum = t._extra = None
        return t

    return _named(method, slow)


def _fast_reduce(op: Op, forward: Any, slow: Any) -> Any:
    """``slow`` with a shortcut for ``axis`` None or one int, as P10's own shortcut: the node
    records the params that the general path records (``axis`` as a sorted tuple or None)."""

    def method(self: Tensor, axis: Any = None, keepdims: bool = False, *args, **kwargs) -> Any:
        if kwargs:  # PyTorch's dim=/keepdim= (see tpx._torch)
            axis, keepdims, kwargs = dim_kwargs(slow.__name__, axis, keepdims, kwargs)
        if (
            self._rg
            and state.grad_enabled
            and not (args or kwargs)
            and keepdims.__class__ is bool
            and not state.anomaly
        ):
            a = self._t
            axes = None if axis is None else _fast_axes(axis, len(a._data.shape))
            if axes is not False:
                start = time.perf_counter() if _mode.observers else 0.0
                out = forward(a, axis, keepdims)
                params = {"axis": axes, "keepdims": keepdims}
                return _record_fast(op, self, None, a, None, out, params, start)
        elif not (self._rg and state.grad_enabled) and not state.anomaly:
            return wrap(forward(self._t, axis, keepdims, *args, **kwargs))  # records nothing
        return slow(self, axis, keepdims, *args, **kwargs)

    return _named(method, slow)


def _fast_inplace(op: Op, slow: Any) -> Any:
    """``slow`` (out of place, then written back, recorded when needed) with a shortcut: when
    nothing is recorded (the optimizer's ``p -= lr * g`` under ``no_grad``), P10 writes in
    place with the backend's in-place kernel."""

    def method(self: Tensor, other: Any) -> Any:
        cls = other.__class__
        if cls is Tensor:
            needs = self._rg or other._rg
            b = other._t
        elif cls is float or cls is int:
            needs = self._rg
            b = other
        else:
            return slow(self, other)
        if (needs and state.grad_enabled) or state.anomaly or _mode.observers:
            return slow(self, other)
        if self._t._inplace(op, b):
            self._ver = self._t.version
            return self
        return slow(self, other)

    return _named(method, slow)


class Tensor(TorchMethods, NumpyInterop, TensorMethods):
    """A differentiable tensor that composes a :class:`p10.Tensor`.

    >>> import tpx as tp
    >>> x = tp.ones((2, 2), requires_grad=True)
    >>> y = (x * 3).sum()
    >>> y.backward()
    >>> x.grad
    tensor([[3., 3.],
            [3., 3.]], dtype=float32)
    """

    __slots__ = ("__weakref__", "_accum", "_extra", "_grad", "_rg", "_t", "_ver", "grad_fn")

    @staticmethod
    def __p10_apply__(op: Any, inputs: tuple, params: dict) -> Any:
        return apply_op(op, inputs, params)

    # -- shortcuts of the hottest operators (see _fast_binary) -----------------------------
    __add__ = _fast_binary(Op.ADD, P.__add__, M.__add__)
    __radd__ = _fast_binary(Op.ADD, P.__add__, M.__radd__, P.__radd__)
    __sub__ = _fast_binary(Op.SUB, P.__sub__, M.__sub__)
    __rsub__ = _fast_binary(Op.SUB, P.__sub__, M.__rsub__, P.__rsub__)
    __mul__ = _fast_binary(Op.MUL, P.__mul__, M.__mul__)
    __rmul__ = _fast_binary(Op.MUL, P.__mul__, M.__rmul__, P.__rmul__)
    __truediv__ = _fast_binary(Op.DIV, P.__truediv__, M.__truediv__)
    __rtruediv__ = _fast_binary(Op.DIV, P.__truediv__, M.__rtruediv__, P.__rtruediv__)
    __iadd__ = _fast_inplace(Op.ADD, M.__iadd__)
    __isub__ = _fast_inplace(Op.SUB, M.__isub__)
    __imul__ = _fast_inplace(Op.MUL, M.__imul__)
    __itruediv__ = _fast_inplace(Op.DIV, M.__itruediv__)
    add_ = _fast_inplace(Op.ADD, M.add_)
    sub_ = _fast_inplace(Op.SUB, M.sub_)
    mul_ = _fast_inplace(Op.MUL, M.mul_)
    div_ = _fast_inplace(Op.DIV, M.div_)
    __matmul__ = _fast_binary(Op.MATMUL, P.__matmul__, M.__matmul__)
    matmul = _fast_binary(Op.MATMUL, P.matmul, M.matmul)
    __neg__ = _fast_unary(Op.NEG, P.__neg__, M.__neg__)
    sum = _fast_reduce(Op.SUM, P.sum, M.sum)  # a dtype= argument takes the slow path
    mean = _fast_reduce(Op.MEAN, P.mean, M.mean)

    def __init__(self, data: Any, *, dtype: Any = None, requires_grad: bool = False) -> None:
        raw = data._t if isinstance(data, Tensor) else data
        t = p10.asarray(raw, dtype=dtype, copy=True)
        _init(self, t)
        if requires_grad:
            self.requires_grad_(True)

    # -- autograd attributes ---------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to this tensor (only floating tensors may require grad)."""
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` on a leaf in place; returns self.

        >>> import tpx as tp
        >>> tp.zeros(2).requires_grad_().requires_grad
        True
        """
        if requires_grad and self._t.dtype.kind != "f":
            raise RequiresGradError(
                f"only floating tensors can require grad, got {self._t.dtype.name}; "
                "cast first with .astype(tp.float32)"
            )
        if self.grad_fn is not None and not requires_grad:
            raise RequiresGradError(
                f"requires_grad_(False) on a non-leaf (output of {self.grad_fn.name}); "
                "use .detach() instead"
            )
        self._rg = bool(requires_grad)
        return self

    def _set_grad(self, value: Any) -> None:
        if value is not None:
            _check_grad_assignment(self, value)
        self._grad = value

    grad = property(
        attrgetter("_grad"),
        _set_grad,
        doc="""The gradient that backward accumulated into this leaf (None before any).

        An assigned value must be a ``tpx.Tensor`` of this tensor's shape and dtype, or None,
        as in PyTorch.

        >>> import tpx as tp
        >>> x = tp.ones(2, requires_grad=True)
        >>> x.grad = tp.zeros(3)
        Traceback (most recent call last):
        ...
        tpx._errors.GradAssignmentError: x.grad = ...: the assigned gradient has shape (3,), \
but the tensor has shape (2,); a gradient has its tensor's shape and dtype (float32)
        """,
    )

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded op (they get ``.grad`` in backward)."""
        return self.grad_fn is None

    def detach(self) -> Tensor:
        """A tensor sharing this value, cut from the graph (``requires_grad=False``).

        >>> import tpx as tp
        >>> (tp.ones(1, requires_grad=True) * 2).detach().requires_grad
        False
        """
        return wrap(self._t)

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf after backward (leaves always keep it)."""
        if self.grad_fn is not None:
            self.grad_fn.retain = weakref.ref(self)
            _graph.hooked.add(self.grad_fn)

    @property
    def retains_grad(self) -> bool:
        """True after :meth:`retain_grad` on a non-leaf."""
        return self.grad_fn is not None and self.grad_fn.retain is not None

    @property
    def name(self) -> str | None:
        """An optional label, e.g. a parameter's dotted path (``model.0.weight``); None unset.

        ``nn.Module`` names its parameters when called; inspectors show the name of a leaf.
        Ops, ``detach()`` and copies do not carry it over.

        >>> import tpx as tp
        >>> w = tp.ones(2, requires_grad=True)
        >>> w.name is None
        True
        >>> w.name = "w"; w.name, (w * 2).name
        ('w', None)
        """
        # NOTE: kept in _extra, so that tensors without a name pay nothing on the hot path
        extra = self._extra
        return None if extra is None else extra.get("name")

    @name.setter
    def name(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"Tensor.name must be a str or None, got {type(value).__name__}")
        if self._extra is None:
            if value is None:
                return
            self._extra = {}
        if value is None:
            self._extra.pop("name", None)
        else:
            self._extra["name"] = value

    def register_hook(self, fn: Any) -> Handle:
        """``fn(grad)`` runs when this tensor's gradient is computed; it may return a new one.

        >>> import tpx as tp
        >>> x = tp.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 10)
        >>> (x * 1).sum().backward(); x.grad.tolist()
        [10.0, 10.0]
        >>> h.remove()
        """
        if not self._rg:
            raise RequiresGradError("register_hook: the tensor does not require grad")
        if not callable(fn):
            raise TypeError(f"register_hook: {fn!r} is not callable")
        if self.grad_fn is not None:
            holder = self.grad_fn
            if holder.tensor_hooks is None:
                holder.tensor_hooks = []
            hooks = holder.tensor_hooks
            _graph.hooked.add(holder)
        else:
            if self._extra is None:
                self._extra = {}
            hooks = self._extra.setdefault("hooks", [])
            _graph.hooked.add(self)
        hooks.append(fn)
        return Handle(lambda: hooks.remove(fn) if fn in hooks else None)

    def backward(
        self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False
    ) -> None:
        """Compute gradients of this tensor with respect to the leaves that require grad.

        >>> import tpx as tp
        >>> x = tp.asarray([1.0, 2.0], requires_grad=True)
        >>> (x ** 2).sum().backward(); x.grad.tolist()
        [2.0, 4.0]
        """
        from tpx._engine import backward

        backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph)

    def _accumulator(self) -> AccumulateGrad:
        acc = self._accum() if self._accum is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._accum = weakref.ref(acc)
        return acc

    # -- value attributes ---------------------------------------------------------------------
    @property
    def p10(self) -> p10.Tensor:
        """The underlying P10 tensor (no graph)."""
        return self._t

    @property
    def data(self) -> Tensor:
        """This tensor's value, detached and sharing its memory: writes into it (as
        ``p.data -= lr * p.grad``) change the tensor without being recorded. Assigning a tensor
        to ``.data`` replaces the value.

        >>> import tpx as tp
        >>> p = tp.ones(2, requires_grad=True)
        >>> p.data -= 0.5 * tp.ones(2); p.tolist(), p.data.requires_grad
        ([0.5, 0.5], False)
        """
        return wrap(self._t)

    @data.setter
    def data(self, value: Any) -> None:
        raw = value._t if isinstance(value, Tensor) else p10.asarray(value)
        if raw is self._t:  # `p.data -= ...` wrote in place already
            return
        if self._rg and raw.dtype.kind != "f":
            raise RequiresGradError(
                f"data: a tensor that requires grad cannot take a {raw.dtype.name} value; "
                "cast it to a floating dtype first"
            )
        self._t, self._ver = raw, raw.version

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dimension."""
        return tuple(self._t._data.shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._t._data.shape)

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self._t.dtype

    @property
    def backend(self) -> p10.Backend:
        """The P10 backend that runs this tensor's ops."""
        return self._t._backend

    @property
    def device(self) -> device:
        """The device of the backend, as a :class:`tpx.device` (equal to its string).

        >>> import tpx as tp
        >>> tp.ones(2).device, tp.ones(2).device == "cpu"
        (device(type='cpu'), True)
        """
        return device(self._t.device)

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a CUDA device."""
        return self.device.type == "cuda"

    @property
    def version(self) -> int:
        """Number of in-place writes to this tensor's memory."""
        return self._t.version

    def numpy(self) -> np.ndarray:
        """The value as a read-only NumPy array (no graph)."""
        return self._t.numpy()

    def item(self) -> bool | int | float:
        """The value of a one-element tensor as a Python scalar."""
        return self._t.item()

    def tolist(self) -> Any:
        """The value as nested Python lists."""
        return self._t.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return self._t.__array__(dtype, copy)

    def __len__(self) -> int:
        return len(self._t)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._t.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._t.__dlpack_device__()

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        import tpx

        return tpx

    def __repr__(self) -> str:
        body = repr(self._t)[:-1]
        if self.grad_fn is not None:
            return f"{body}, grad_fn=<{self.grad_fn.name}>)"
        return f"{body}, requires_grad=True)" if self._rg else body + ")"

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:  # f"{loss:.4f}", as PyTorch
            return format(self.item(), spec)
        if not spec:
            return str(self)
        raise TypeError(
            f"format spec {spec!r} needs a 0-d tensor, this one has shape {self.shape}; "
            "format .item() of one element or .tolist()"
        )

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """This tensor with another dtype and/or device, as PyTorch's ``to``: ``to(dtype)``,
        ``to("cpu")``, ``to(device, dtype)``, ``to(other_tensor)``, or keywords ``dtype=``,
        ``device=`` and P10's ``backend=``. A cast is recorded; a device change is a copy.

        >>> import tpx as tp
        >>> x = tp.ones(2)
        >>> x.to("cpu") is x, x.to(tp.float64).dtype, x.to(tp.zeros(1, dtype=tp.int64)).dtype
        (True, dtype('float64'), dtype('int64'))
        """
        dtype, dev, backend = _to_args(args, kwargs)
        copy = bool(kwargs.get("copy"))
        out = self if dtype is None else self.astype(dtype, copy=copy)
        if backend is None and (dev is None or device(dev) == self.device):
            return out.clone() if copy and out is self else out
        if dev is not None:  # with a backend named, that backend judges the device
            dev = str(device(dev)) if backend is not None else device_arg(dev, "to")
        if out._rg:
            raise NotImplementedError(
                "to(device or backend) of a tensor that requires grad: move it first, then "
                "call requires_grad_() on the moved tensor"
            )
        return wrap(out._t.to(backend=backend, device=dev))

    def cpu(self) -> Tensor:
        """This tensor on the CPU (itself when it is there already).

        >>> import tpx as tp
        >>> x = tp.ones(2); x.cpu() is x
        True
        """
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Tensor:
        """This tensor on a CUDA device: an error naming the fix, as TPX has none."""
        return self.to("cuda" if device is None else device)

    # -- in-place writes ----------------------------------------------------------------------
    def _check_inplace(self, other_requires_grad: bool) -> bool:
        recording = state.grad_enabled and (self._rg or other_requires_grad)
        if recording and self._rg:
            if self.grad_fn is None:
                raise InplaceError(
                    f"a leaf tensor of shape {self.shape} that requires grad is used in an "
                    "in-place operation; do it under tp.no_grad() (as optimizers do) or on a "
                    "clone()"
                )
            if _view_of_leaf(self):
                raise InplaceError(
                    f"a view of a leaf tensor that requires grad (this view has shape "
                    f"{self.shape}) is used in an in-place operation; do it under tp.no_grad() "
                    "or on a clone()"
                )
        return recording

    def _assign(self, result: Any) -> Tensor:
        recording = self._check_inplace(getattr(result, "_rg", False))
        if recording and result.grad_fn is not None:
            _snapshot_saved(result.grad_fn, self)
        self._t._assign(result._t if isinstance(result, Tensor) else result)
        if recording:
            self.grad_fn, self._rg = result.grad_fn, result._rg
        self._ver = self._t.version
        return self

    def _setitem(self, key: Any, value: Any) -> None:
        if self._check_inplace(getattr(value, "_rg", False)):
            self._assign(p10.index_put(self, key, value))
            return
        raw = value._t if isinstance(value, Tensor) else value
        self._t._setitem(key, raw)
        self._ver = self._t.version


def _check_grad_assignment(t: Tensor, value: Any) -> None:
    """Refuse ``t.grad = value`` for a value that is not a gradient of ``t`` (as PyTorch does)."""
    where = "x.grad = ...: the assigned gradient"
    if value.__class__ is not Tensor and not isinstance(value, Tensor):
        raise GradAssignmentError(
            f"{where} is a {type(value).__name__}, not a tpx.Tensor (or None); wrap it with "
            f"tp.asarray(value, dtype=tp.{t.dtype.name}) for a tensor of shape {t.shape}"
        )
    if value is t:
        raise GradAssignmentError("x.grad = x: a tensor cannot be its own gradient; assign a clone")
    fix = f"a gradient has its tensor's shape and dtype ({t.dtype.name})"
    if value.shape != t.shape:
        raise GradAssignmentError(
            f"{where} has shape {value.shape}, but the tensor has shape {t.shape}; {fix}"
        )
    if value.dtype != t.dtype:
        raise GradAssignmentError(
            f"{where} has dtype {value.dtype.name}, but the tensor has dtype {t.dtype.name}; "
            f"{fix}: cast it with .astype(tp.{t.dtype.name})"
        )


def _to_args(args: tuple, kwargs: dict) -> tuple[Any, Any, Any]:
    """``(dtype, device, backend)`` of a call to ``Tensor.to``."""
    dtype, dev = kwargs.pop("dtype", None), kwargs.pop("device", None)
    backend = kwargs.pop("backend", None)
    unknown = set(kwargs) - {"copy", "non_blocking", "memory_format"}
    if unknown:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(unknown)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif is_device(a):
            dev = a
        elif a is not None:
            dtype = a
    return dtype, dev, backend


def _view_of_leaf(t: Tensor) -> bool:
    """True when ``t`` shares memory (its version counter) with a leaf that requires grad."""
    vc = t._t._vc
    node = t.grad_fn
    while vc is not None and node is not None and node.op in VIEW_OPS:
        node = node.edges[0]
    return node.__class__ is AccumulateGrad and vc is not None and node.variable._t._vc is vc


def _snapshot_saved(node: GradFn, target: Tensor) -> None:
    """Before ``target`` is overwritten by the result of ``node`` (``x *= x``), keep a copy
    of its old value wherever ``node`` saved it, so the gradient stays correct."""
    saved, raw = node.saved, target._t
    if not saved or not any(s is raw or s is target for s in saved):
        return
    old = p10.asarray(raw, copy=True)
    node.saved = tuple(old if s is raw or s is target else s for s in saved)
    node.versions = tuple(0 if s is old else v for s, v in zip(node.saved, node.versions))


def _init(t: Tensor, raw: p10.Tensor) -> None:
    t._t = raw
    t._rg = False
    t._grad = None
    t.grad_fn = None
    t._ver = 0
    t._accum = None
    t._extra = None


def wrap(raw: p10.Tensor) -> Tensor:
    """A ``tpx.Tensor`` (no grad) around a P10 tensor, without copying."""
    t = object.__new__(Tensor)
    t._t = raw
    t._rg = False
    t._grad = None
    t.grad_fn = None
    t._ver = 0  # NOTE: only compared for tensors with a grad_fn; _record sets it for those
    t._accum = None
    t._extra = None
    return t


def apply_op(op: Any, inputs: tuple, params: dict) -> Any:
    """Run ``op`` on P10 and, when an input requires grad in grad mode, record a GradFn."""
    raw = []
    needs = False
    for x in inputs:
        if x.__class__ is Tensor:
            raw.append(x._t)
            if x._rg:
                needs = True
        else:
            raw.append(x)
    start = time.perf_counter() if _mode.observers else 0.0
    out = execute(op, raw, params)
    if needs and state.grad_enabled:
        # NOTE: skip=2: __p10_apply__ is this function's only caller, so the user's frame lies
        # past it (at p10.apply's caller, or at __p10_apply__'s caller when called directly)
        return _record(op, inputs, raw, params, out, start, skip=2)
    result = wrap(out)
    if state.anomaly & NAN_CHECKS:
        _check_finite(op, None, out)
    return result


def _edge(x: Any) -> Any:
    if x.__class__ is not Tensor or not x._rg:
        return None
    fn = x.grad_fn
    if fn is None:
        acc = x._accum  # the leaf's AccumulateGrad, held weakly (see Tensor._accumulator)
        fn = acc() if acc is not None else None
        return x._accumulator() if fn is None else fn
    if x._ver != x._t.version:
        raise InplaceError(
            f"a tensor of shape {x.shape} (output of {fn.name} at {fn.source}) was modified "
            "in place through another view after it was computed, so its graph no longer "
            "describes its value; clone() it before writing into it"
        )
    return fn


def _record(
    op: Any,
    inputs: tuple,
    raw: list | tuple,
    params: dict,
    out: p10.Tensor,
    start: float = 0.0,
    skip: int = 0,
) -> Any:
    """Record the node of ``op`` (called with ``skip`` TPX frames between the caller and the
    user's code, see :func:`~tpx._graph.user_frame`) and return the output tensor."""
    rule = RULES.get(op)
    overrides = state.overrides
    if overrides is not None:
        rule = overrides.rule(op, rule)
    if rule is None:
        if op in NON_DIFFERENTIABLE:
            return wrap(out)
        raise MissingRuleError(
            f"{op.value}: no gradient rule for this op; register one with "
            f"tpx.register_rule(op, vjp) or call it under tp.no_grad()"
        )
    od = out._data
    key = [op, out._backend, od.shape, od.dtype]
    for r in raw:
        data = r._data
        key += (data.shape, data.dtype)
    key = tuple(key)
    meta = _node_meta.get(key)
    if meta is None:
        meta = _new_meta(key, raw, out)
    if meta[1][1].kind != "f":
        return wrap(out)
    # NOTE: the edges first: a leaf's AccumulateGrad made here must get a smaller sequence
    # number than this node (the engine runs nodes by decreasing number)
    edges = tuple([_edge(x) for x in inputs])
    node = _new(GradFn)  # GradFn.__init__ written out, as in _record_fast
    node.seq = next(_graph._seq)
    node.op, node.params, node.rule = op, params, rule
    node.edges = edges
    node.needs_input_grad = needs_of(edges)
    node.in_meta, node.out_meta = meta
    if overrides is not None:
        node.overrides = overrides.mark(op, out._backend)
    if rule.save or rule.save_output or rule.save_from is not None:
        _save(node, rule, raw, out, edges)
    scope = state.scope
    if scope:  # the class default is ""
        node.scope = scope
    node.code, node.lineno = user_frame(skip)
    t = _new(Tensor)  # wrap() inlined
    t._t, t._rg, t.grad_fn = out, True, node
    t._ver = out.version  # a view shares its base's counter, which may be past 0
    t._grad = t._accum = t._extra = None
    if state.anomaly & NAN_CHECKS:
        _check_finite(op, node, out)
    if _mode.observers:
        _mode.emit("on_node_recorded", node, t)
        _mode.emit("on_node_forward", node, inputs, t, time.perf_counter() - start)
    return t


def _save(node: GradFn, rule: Any, raw: list, out: p10.Tensor, edges: tuple) -> None:
    # NOTE: P10 values are saved, not TPX tensors (the engine rebuilds those from the edges
    # under create_graph, as PyTorch's SavedVariable does): intermediate tpx.Tensor objects
    # are then freed as soon as the user drops them.
    n = len(raw)
    saved: list[Any] = [None] * (n + 1)
    for i in rule.save:
        if i < n:  # a custom op without a declared arity may get fewer inputs
            saved[i] = raw[i]
    if rule.save_from is not None:  # a variadic op (see Rule.save_from)
        for i in range(rule.save_from, n):
            saved[i] = raw[i]
    if rule.cross:  # each input only for the other's gradient (see Rule.cross)
        saved[0] = raw[0] if edges[1] is not None else None
        saved[1] = raw[1] if edges[0] is not None else None
    if rule.save_output:
        saved[n] = out
    node.saved = tuple(saved)
    node.versions = _versions(node.saved)
    if state.anomaly & SAVED_CHECKS:
        record_checksums(node)


_ZEROS = tuple((0,) * n for n in range(8))


def _versions(saved: tuple) -> tuple:
    for v in saved:
        if v is not None and v._vc is not None:  # a view, or written in place before
            return shared(tuple([0 if v is None else v.version for v in saved]))
    # NOTE: the common case: no saved value has a version counter yet, so all are at 0
    n = len(saved)
    return _ZEROS[n] if n < len(_ZEROS) else (0,) * n


def _check_finite(op: Any, node: GradFn | None, out: p10.Tensor) -> None:
    arr = np.asarray(out)
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        kind = "NaN" if np.isnan(arr).any() else "Inf"
        name = node.name if node is not None else "no grad"
        code, line = user_frame()
        where = f"{code.co_filename}:{line}" if code is not None else "<unknown>"
        raise AnomalyError(
            f"anomaly in forward of {op.value} ({name}): the output of shape {arr.shape} "
            f"contains {kind}; produced at {where}"
        )
