"""The ``Tensor`` methods that call P10 functions, installed once the functions exist.

The function modules need the ``Tensor`` class (to dispatch and wrap results), so the methods
that call them cannot be in the class body: this module, imported last by ``p10/__init__``,
installs them on :class:`~p10._methods.TensorMethods`, the mixin shared by ``p10.Tensor`` and
``tpx.Tensor`` (as JAX's ``_set_array_base_attributes`` does for its arrays):

* the Python operators, from the table :data:`OPERATORS` (``x + y`` calls :func:`p10.add`);
* the named methods of :class:`~p10._named_methods.NamedMethods` (``x.sum()``, ...);
* the methods of the op-spec table (``x.exp()``; see :mod:`p10._opspec`);
* ``p10.Tensor``'s direct-kernel shortcuts of the hottest of them (:mod:`p10._fast`), and its
  own methods that call functions (``__init__``, ``to``, ``_setitem``).

Every method calls a P10 function, which dispatches on its inputs (see :func:`p10.apply`), so a
``tpx.Tensor`` goes through TPX's recording path with the same semantics.

>>> import p10
>>> x = p10.asarray([[1.0, 2.0]])
>>> (x + 1).tolist(), x.T.shape, p10.Tensor.__add__.__name__
([[2.0, 3.0]], (2, 1), '__add__')
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from p10 import _fast
from p10._backend import Backend
from p10._creation import asarray
from p10._elementwise import operand
from p10._errors import ArgumentError
from p10._functions import (
    FUNCTIONS,
    add,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    divide,
    equal,
    floor_divide,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_not,
    multiply,
    negative,
    not_equal,
    positive,
    remainder,
    subtract,
)
from p10._functions import abs as abs_
from p10._functions import pow as pow_
from p10._index_ops import drop_0d_masks, normalize_key
from p10._indexing import fill_key
from p10._methods import TensorMethods
from p10._named_methods import NamedMethods
from p10._ops import SPEC_OF, Op
from p10._opspec import OpSpec
from p10._products import matmul
from p10._tensor import Tensor

# -- the Python operators ------------------------------------------------------------------------
# (name, function, reflected: also __rname__, in place: also __iname__)
OPERATORS: tuple[tuple[str, Callable[..., Any], bool, bool], ...] = (
    ("add", add, True, True),
    ("sub", subtract, True, True),
    ("mul", multiply, True, True),
    ("truediv", divide, True, True),
    ("floordiv", floor_divide, True, True),
    ("mod", remainder, True, True),
    ("pow", pow_, True, True),
    ("matmul", matmul, True, True),
    ("and", bitwise_and, True, False),
    ("or", bitwise_or, True, False),
    ("xor", bitwise_xor, True, False),
    ("lshift", bitwise_left_shift, True, True),
    ("rshift", bitwise_right_shift, True, True),
    ("eq", equal, False, False),
    ("ne", not_equal, False, False),
    ("lt", less, False, False),
    ("le", less_equal, False, False),
    ("gt", greater, False, False),
    ("ge", greater_equal, False, False),
)
UNARY_OPERATORS: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("neg", negative),
    ("pos", positive),
    ("abs", abs_),
)


def _named(method: Callable[..., Any], name: str, doc: str | None = None) -> Callable[..., Any]:
    method.__name__ = name
    method.__qualname__ = f"TensorMethods.{name}"
    method.__doc__ = doc
    return method


def _operators(name: str, fn: Callable[..., Any], reflected: bool, inplace: bool) -> dict:
    out = {f"__{name}__": _named(lambda self, other: fn(self, other), f"__{name}__")}
    if reflected:
        out[f"__r{name}__"] = _named(lambda self, other: fn(other, self), f"__r{name}__")
    if inplace:

        def method(self: Any, other: Any) -> Any:
            return self._assign(fn(self, other))

        out[f"__i{name}__"] = _named(method, f"__i{name}__")
    return out


def _invert(self: Any) -> Any:
    if self.dtype.kind == "b":
        return logical_not(self)
    return bitwise_invert(self)


# -- the methods of the op-spec table --------------------------------------------------------------
def _spec_method(fn: Callable[..., Any], name: str, arity: int) -> Callable[..., Any]:
    if arity == 1:

        def method(self: Any) -> Any:
            return fn(self)

    else:

        def method(self: Any, other: Any) -> Any:
            return fn(self, other)

    return _named(method, name, f"See :func:`p10.{fn.__name__}`.")


def _install_spec_methods() -> None:
    """Each ``spec.methods`` on the mixin, and the ``fast`` ones' shortcuts on ``p10.Tensor``."""
    for op, spec in SPEC_OF.items():
        for name in spec.methods:
            method = _spec_method(FUNCTIONS[spec.function_name], name, spec.arity)
            setattr(TensorMethods, name, method)
            if spec.fast:
                setattr(Tensor, name, _shortcut(op, spec, method))


def _shortcut(op: Op, spec: OpSpec, method: Callable[..., Any]) -> Callable[..., Any]:
    make = _fast.fast_unary if spec.arity == 1 else _fast.fast_binary
    return make(op, method, floating=spec.dtypes == "float")


# -- p10.Tensor's own methods that call functions ------------------------------------------------
def _init(
    self: Tensor, data: Any, *, dtype: Any = None, backend: str | Backend | None = None
) -> None:
    t = asarray(data, dtype=dtype, backend=backend)
    self._data, self._backend, self._vc = t._data, t._backend, None


def _to(
    self: Tensor, dtype: Any = None, *, backend: str | Backend | None = None, device: Any = None
) -> Tensor:
    """This tensor on another backend, device and/or dtype (a copy when changed).

    >>> import p10
    >>> p10.ones(2).to("float64").dtype, p10.ones(2).to(device="cpu").device
    (dtype('float64'), 'cpu')
    """
    if backend is None and dtype is None and device is None:
        return self
    target = backend if backend else self._backend
    return asarray(self, dtype=dtype, backend=target, device=device)


def _setitem(self: Tensor, key: Any, value: Any) -> None:
    key = drop_0d_masks(key)
    if key is None:
        return  # a False 0-d mask selects nothing
    k, tensors = normalize_key(self, key, "setitem")
    self._write(fill_key(k, tuple(t._data for t in tensors)), operand(value, self))


def _array_namespace(namespace: ModuleType) -> Callable[..., Any]:
    def __array_namespace__(self: Any, *, api_version: str | None = None) -> ModuleType:
        """The ``p10`` module, the Array API namespace of this tensor (standard 2024.12)."""
        if api_version is not None and api_version not in ("2023.12", "2024.12"):
            raise ArgumentError(
                f"__array_namespace__: api_version {api_version!r} is not supported; "
                "p10 implements 2024.12"
            )
        return namespace

    return _named(__array_namespace__, "__array_namespace__", __array_namespace__.__doc__)


def install(namespace: ModuleType) -> None:
    """Install every method (run once by ``p10/__init__``, which passes itself as the Array API
    namespace the tensors name)."""
    for name, fn, reflected, inplace in OPERATORS:
        for method_name, method in _operators(name, fn, reflected, inplace).items():
            setattr(TensorMethods, method_name, method)
    for name, fn in UNARY_OPERATORS:
        setattr(TensorMethods, f"__{name}__", _named(fn_method(fn), f"__{name}__"))
    TensorMethods.__invert__ = _named(_invert, "__invert__")
    for name, value in vars(NamedMethods).items():
        if callable(value) and name not in ("__init_subclass__", "__subclasshook__"):
            value.__qualname__ = f"TensorMethods.{name}"
            setattr(TensorMethods, name, value)
        elif isinstance(value, property):
            setattr(TensorMethods, name, value)
    TensorMethods.__array_namespace__ = _array_namespace(namespace)
    _install_spec_methods()
    _fast.install()
    Tensor.__init__ = _named(_init, "__init__")
    Tensor.to = _named(_to, "to", _to.__doc__)
    Tensor._setitem = _named(_setitem, "_setitem")


def fn_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The unary operator method calling ``fn``."""
    return lambda self: fn(self)
