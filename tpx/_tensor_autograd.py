"""The autograd side of ``tpx.Tensor`` (a mixin): ``requires_grad``, ``grad``, ``grad_fn``'s
leaf node, ``retain_grad``, hooks, ``name`` and ``backward``, which runs the engine that
``tpx._engine`` plugs in here (the engine imports the tensor, not the other way)."""

from __future__ import annotations

import weakref
from operator import attrgetter
from typing import Any

from p10 import Handle
from tpx import _graph
from tpx._errors import GradAssignmentError, RequiresGradError
from tpx._graph import AccumulateGrad


class AutogradAttributes:
    """``requires_grad``, ``grad``, hooks and ``backward`` of :class:`tpx.Tensor`."""

    __slots__ = ()

    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to this tensor (only floating tensors may require grad)."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        """Set ``requires_grad`` on a leaf in place; returns self.

        >>> import tpx as tp
        >>> tp.zeros(2).requires_grad_().requires_grad
        True
        """
        if requires_grad and self._value.dtype.kind not in "fc":
            raise RequiresGradError(
                f"only floating tensors can require grad, got {self._value.dtype.name}; "
                "cast first with .astype(tp.float32)"
            )
        if self.grad_fn is not None and not requires_grad:
            raise RequiresGradError(
                f"requires_grad_(False) on a non-leaf (output of {self.grad_fn.name}); "
                "use .detach() instead"
            )
        self._requires_grad = bool(requires_grad)
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

    def detach(self) -> Any:
        """A tensor sharing this value, cut from the graph (``requires_grad=False``).

        >>> import tpx as tp
        >>> (tp.ones(1, requires_grad=True) * 2).detach().requires_grad
        False
        """
        return self._wrap(self._value)

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
        # NOTE: kept in _rare_attrs, so that tensors without a name pay nothing on the hot path
        extra = self._rare_attrs
        return None if extra is None else extra.get("name")

    @name.setter
    def name(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"Tensor.name must be a str or None, got {type(value).__name__}")
        if self._rare_attrs is None:
            if value is None:
                return
            self._rare_attrs = {}
        if value is None:
            self._rare_attrs.pop("name", None)
        else:
            self._rare_attrs["name"] = value

    def register_hook(self, fn: Any) -> Handle:
        """``fn(grad)`` runs when this tensor's gradient is computed; it may return a new one.

        >>> import tpx as tp
        >>> x = tp.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 10)
        >>> (x * 1).sum().backward(); x.grad.tolist()
        [10.0, 10.0]
        >>> h.remove()
        """
        if not self._requires_grad:
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
            if self._rare_attrs is None:
                self._rare_attrs = {}
            hooks = self._rare_attrs.setdefault("hooks", [])
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
        grads = None if gradient is None else (gradient,)
        _engine_backward((self,), grads, retain_graph, create_graph)

    def _accumulator(self) -> AccumulateGrad:
        acc = self._accumulator_ref() if self._accumulator_ref is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._accumulator_ref = weakref.ref(acc)
        return acc


def _no_engine(*args: Any) -> None:
    raise RuntimeError("backward: tpx._engine was not imported; import tpx")


# NOTE: the engine imports this module and plugs its backward in here (see use_engine), so
# that imports go one way, engine -> tensor
_engine_backward = _no_engine


def use_engine(backward: Any) -> None:
    """Make ``Tensor.backward`` call ``backward`` (``tpx._engine`` does, when imported)."""
    global _engine_backward
    _engine_backward = backward


def _check_grad_assignment(t: Any, value: Any) -> None:
    """Refuse ``t.grad = value`` for a value that is not a gradient of ``t`` (as PyTorch does)."""
    where = "x.grad = ...: the assigned gradient"
    if not isinstance(value, AutogradAttributes):  # NOTE: tpx.Tensor is the class with it
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
