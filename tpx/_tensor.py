"""``tpx.Tensor``: a P10 tensor plus ``requires_grad``, ``grad`` and ``grad_fn``.

Every P10 function dispatches to :func:`tpx._recording.apply_op` when one of its inputs is a
``tpx.Tensor`` (P10's ``__p10_apply__`` protocol, set by that module); the hottest operators
have shortcuts (:mod:`tpx._shortcuts`). Both record through :mod:`tpx._recording`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import p10
from p10._methods import TensorMethods
from p10._tensor import VIEW_OPS
from tpx._device import device, device_arg, is_device
from tpx._errors import (
    InplaceError,
    RequiresGradError,
)
from tpx._graph import AccumulateGrad, GradFn
from tpx._mode import state
from tpx._numpy_interop import NumpyInterop
from tpx._tensor_autograd import AutogradAttributes
from tpx._torch_methods import TorchMethods

P = p10.Tensor
M = TensorMethods
_new = object.__new__


class Tensor(AutogradAttributes, TorchMethods, NumpyInterop, TensorMethods):
    """A differentiable tensor that composes a :class:`p10.Tensor`.

    >>> import tpx as tp
    >>> x = tp.ones((2, 2), requires_grad=True)
    >>> y = (x * 3).sum()
    >>> y.backward()
    >>> x.grad
    tensor([[3., 3.],
            [3., 3.]], dtype=float32)
    """

    # _value: the P10 tensor holding the values (public: .p10); _requires_grad; _grad: .grad;
    # grad_fn; _recorded_version: the value's version when grad_fn recorded it (a later write
    # through another view makes the graph stale); _accumulator_ref: a leaf's AccumulateGrad,
    # held weakly; _rare_attrs: a dict of what few tensors have (name, hooks), else None
    __slots__ = (
        "__weakref__",
        "_accumulator_ref",
        "_grad",
        "_rare_attrs",
        "_recorded_version",
        "_requires_grad",
        "_value",
        "grad_fn",
    )

    @staticmethod
    def _wrap(raw: p10.Tensor) -> Tensor:
        """``wrap`` for the mixins' methods (they cannot import this module)."""
        return wrap(raw)

    def __init__(self, data: Any, *, dtype: Any = None, requires_grad: bool = False) -> None:
        raw = data._value if isinstance(data, Tensor) else data
        t = p10.asarray(raw, dtype=dtype, copy=True)
        _init(self, t)
        if requires_grad:
            self.requires_grad_(True)

    # -- value attributes ---------------------------------------------------------------------
    @property
    def p10(self) -> p10.Tensor:
        """The underlying P10 tensor (no graph)."""
        return self._value

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
        return wrap(self._value)

    @data.setter
    def data(self, value: Any) -> None:
        raw = value._value if isinstance(value, Tensor) else p10.asarray(value)
        if raw is self._value:  # `p.data -= ...` wrote in place already
            return
        if self._requires_grad and raw.dtype.kind not in "fc":
            raise RequiresGradError(
                f"data: a tensor that requires grad cannot take a {raw.dtype.name} value; "
                "cast it to a floating dtype first"
            )
        self._value, self._recorded_version = raw, raw.version

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dimension."""
        return tuple(self._value._data.shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._value._data.shape)

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self._value.dtype

    @property
    def backend(self) -> p10.Backend:
        """The P10 backend that runs this tensor's ops."""
        return self._value._backend

    @property
    def device(self) -> device:
        """The device of the backend, as a :class:`tpx.device` (equal to its string).

        >>> import tpx as tp
        >>> tp.ones(2).device, tp.ones(2).device == "cpu"
        (device(type='cpu'), True)
        """
        return device(self._value.device)

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a CUDA device."""
        return self.device.type == "cuda"

    @property
    def version(self) -> int:
        """Number of in-place writes to this tensor's memory."""
        return self._value.version

    def numpy(self) -> np.ndarray:
        """The value as a read-only NumPy array (no graph)."""
        return self._value.numpy()

    def item(self) -> bool | int | float:
        """The value of a one-element tensor as a Python scalar."""
        return self._value.item()

    def tolist(self) -> Any:
        """The value as nested Python lists."""
        return self._value.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return self._value.__array__(dtype, copy)

    def __len__(self) -> int:
        return len(self._value)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._value.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._value.__dlpack_device__()

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        import tpx

        return tpx

    def __repr__(self) -> str:
        body = repr(self._value)[:-1]
        if self.grad_fn is not None:
            return f"{body}, grad_fn=<{self.grad_fn.name}>)"
        return f"{body}, requires_grad=True)" if self._requires_grad else body + ")"

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
        if out._requires_grad:
            raise NotImplementedError(
                "to(device or backend) of a tensor that requires grad: move it first, then "
                "call requires_grad_() on the moved tensor"
            )
        return wrap(out._value.to(backend=backend, device=dev))

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
        recording = state.grad_enabled and (self._requires_grad or other_requires_grad)
        if recording and self._requires_grad:
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
        recording = self._check_inplace(getattr(result, "_requires_grad", False))
        if recording and result.grad_fn is not None:
            _snapshot_saved(result.grad_fn, self)
        self._value._assign(result._value if isinstance(result, Tensor) else result)
        if recording:
            self.grad_fn, self._requires_grad = result.grad_fn, result._requires_grad
        self._recorded_version = self._value.version
        return self

    def _setitem(self, key: Any, value: Any) -> None:
        if self._check_inplace(getattr(value, "_requires_grad", False)):
            self._assign(p10.index_put(self, key, value))
            return
        raw = value._value if isinstance(value, Tensor) else value
        self._value._setitem(key, raw)
        self._recorded_version = self._value.version


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
    vc = t._value._vc
    node = t.grad_fn
    while vc is not None and node is not None and node.op in VIEW_OPS:
        node = node.edges[0]
    return node.__class__ is AccumulateGrad and vc is not None and node.variable._value._vc is vc


def _snapshot_saved(node: GradFn, target: Tensor) -> None:
    """Before ``target`` is overwritten by the result of ``node`` (``x *= x``), keep a copy
    of its old value wherever ``node`` saved it, so the gradient stays correct."""
    saved, raw = node.saved, target._value
    if not saved or not any(s is raw or s is target for s in saved):
        return
    old = p10.asarray(raw, copy=True)
    node.saved = tuple(old if s is raw or s is target else s for s in saved)
    node.versions = tuple(0 if s is old else v for s, v in zip(node.saved, node.versions))


def _init(t: Tensor, raw: p10.Tensor) -> None:
    t._value = raw
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._recorded_version = 0
    t._accumulator_ref = None
    t._rare_attrs = None


def wrap(raw: p10.Tensor) -> Tensor:
    """A ``tpx.Tensor`` (no grad) around a P10 tensor, without copying."""
    t = object.__new__(Tensor)
    t._value = raw
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._recorded_version = 0  # NOTE: compared only for tensors with a grad_fn (set when recorded)
    t._accumulator_ref = None
    t._rare_attrs = None
    return t
