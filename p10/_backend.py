"""Backends: a name plus a kernel table keyed by :class:`~p10.Op`, behind a tiny contract.

A backend converts to and from NumPy (``from_numpy``/``to_numpy``), tells the dtype of one of
its arrays, and maps each op it supports to a kernel ``kernel(*arrays, **params) -> array``.
The contract, in full:

* its arrays are of ``array_type`` and have a ``.shape`` tuple and a ``.dtype`` (as Array API
  arrays do); a kernel may also return a NumPy array or scalar, which the dispatcher converts
  with ``from_numpy``;
* ``dtype_of(array)`` is one of P10's dtypes (NumPy dtype objects), read from ``array.dtype``
  unless the backend says otherwise;
* kernels never write into their inputs, and params are the plain values the dispatcher passes
  (see :mod:`p10._ops`); inputs reach a kernel already promoted to one dtype where the op needs
  it (see :mod:`p10._elementwise`);
* ``setitem(dst, key, value)`` writes in place (``None``: the backend refuses in-place writes),
  and ``may_share_memory(a, b)`` tells whether a view op's output aliases its input (``True``
  errs on the safe side: the output then shares the input's version counter).

Two optional speed-ups, which change no result: ``weak_scalars`` says that the kernels of
binary ops also take a Python ``int``/``float`` as an operand with NEP 50 weak-scalar semantics
(a float32 array times ``2.5`` stays float32), so that ``x * 2.5`` skips building a 0-d array,
and take a bool array next to a floating one (the result has the float's dtype, as P10's
promotion gives);
``inplace`` maps ``ADD``/``SUB``/``MUL``/``DIV`` to ``kernel(dst, other)`` that computes
``dst op other`` into ``dst``'s own memory (``x -= lr * g`` without a temporary and a copy).

A lazy backend (Dask) sets ``lazy=True``: its ops only record work, and a value is computed
when read. It gives ``persist(arrays) -> arrays``, which computes several arrays in one pass and
keeps the results where they are (on a cluster's workers), and ``compute(arrays) -> NumPy
arrays``, which computes several arrays in one pass and brings them to this process; see
:func:`p10.materialize` and :func:`p10.fetch`. An eager backend needs neither.

A missing kernel raises :class:`~p10.MissingKernelError` naming the op and the backend. The
NumPy backend is the executable spec; ``tests/p10/test_p10_backends.py`` sweeps every registered
backend against it.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from p10._errors import ArgumentError, BackendError, DTypeError, MissingKernelError
from p10._ops import Op


@dataclass(frozen=True)
class CustomOp:
    """An op defined by user code with :func:`define_op`; used wherever an :class:`Op` is.

    >>> CustomOp("softplus", 1).value
    'softplus'
    """

    value: str
    arity: int | None

    @property
    def name(self) -> str:
        return self.value.upper()

    def remove(self) -> None:
        """Undo :func:`define_op`: forget the name and drop the op's kernel from every backend.

        >>> import numpy as np, p10
        >>> op = define_op("twice_doc", lambda x: 2 * x); op.remove()
        >>> "twice_doc" in {o.value for o in _custom_ops.values()}, op in get_backend().kernels
        (False, False)
        """
        if _custom_ops.get(self.value) == self:
            del _custom_ops[self.value]
        for backend in _registry.values():
            backend.kernels.pop(self, None)


OpKey = Op | CustomOp


class Handle:
    """Returned by every registration; ``.remove()`` undoes it (also a context manager).

    >>> h = Handle(lambda: print("removed")); h.remove(); h.remove()
    removed
    """

    __slots__ = ("_undo",)

    def __init__(self, undo: Callable[[], None]) -> None:
        self._undo: Callable[[], None] | None = undo

    def remove(self) -> None:
        """Undo the registration; a second call does nothing."""
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


@dataclass(eq=False)
class Backend:
    """A kernel table plus conversions. The NumPy backend is the executable spec of every op.

    >>> import numpy as np
    >>> b = Backend("tiny", {Op.ADD: np.add}, np.ndarray, np.asarray, np.asarray)
    >>> b.kernel(Op.ADD)(np.ones(2), np.ones(2))
    array([2., 2.])
    """

    name: str
    kernels: dict[OpKey, Callable[..., Any]]
    array_type: type
    from_numpy: Callable[[np.ndarray], Any]
    to_numpy: Callable[[Any], np.ndarray]
    dtype_of: Callable[[Any], np.dtype] = operator.attrgetter("dtype")
    setitem: Callable[[Any, Any, Any], None] | None = None
    may_share_memory: Callable[[Any, Any], bool] = field(default=lambda a, b: True)
    device: str = "cpu"
    weak_scalars: bool = False
    inplace: dict[OpKey, Callable[[Any, Any], Any]] = field(default_factory=dict)
    lazy: bool = False
    persist: Callable[[list[Any]], list[Any]] | None = None
    compute: Callable[[list[Any]], list[np.ndarray]] | None = None

    def kernel(self, op: OpKey) -> Callable[..., Any]:
        """The kernel for ``op``, or :class:`MissingKernelError` naming op and backend."""
        try:
            return self.kernels[op]
        except KeyError:
            raise MissingKernelError(
                f"{op.value}: backend '{self.name}' has no kernel for this op; register one "
                f"with p10.register_kernel({op!s}, '{self.name}', fn) or move the tensors to a "
                "backend that has it with .to(backend='numpy')"
            ) from None

    def __repr__(self) -> str:
        return f"Backend({self.name!r}, {len(self.kernels)} kernels)"


_registry: dict[str, Backend] = {}
_state = threading.local()


def register_backend(backend: Backend) -> Handle:
    """Make ``backend`` selectable by name; the handle's ``remove()`` unregisters it.

    >>> import numpy as np
    >>> h = register_backend(Backend("demo", {}, np.ndarray, np.asarray, np.asarray))
    >>> get_backend("demo").name
    'demo'
    >>> h.remove(); "demo" in list_backends()
    False
    """
    if backend.name in _registry:
        raise BackendError(f"register_backend: a backend named '{backend.name}' exists already")
    _registry[backend.name] = backend
    return Handle(lambda: _registry.pop(backend.name, None))


def register_kernel(op: OpKey, backend: str, kernel: Callable[..., Any]) -> Handle:
    """Add or replace one kernel of a registered backend; ``remove()`` restores the old one.

    >>> import numpy as np
    >>> h = register_kernel(Op.ADD, "numpy", np.subtract); h.remove()
    """
    table = get_backend(backend).kernels
    previous = table.get(op)
    table[op] = kernel

    def undo() -> None:
        if previous is None:
            table.pop(op, None)
        else:
            table[op] = previous

    return Handle(undo)


def list_backends() -> list[str]:
    """Names of the registered backends, in registration order.

    >>> list_backends()[0]
    'numpy'
    """
    return list(_registry)


# Functions that make a backend by name on first use, or return None for a name they do not
# know: p10/__init__ adds p10.backends.resolve (the optional libraries: "torch", "dask", ...).
_resolvers: list[Callable[[str, Any], Backend | None]] = []


def add_resolver(resolve: Callable[[str, Any], Backend | None]) -> None:
    """Let ``get_backend`` ask ``resolve(name, device)`` for a backend it has not registered."""
    _resolvers.append(resolve)


def get_backend(name: str | Backend | None = None, device: Any = None) -> Backend:
    """The backend called ``name`` (on ``device``); ``None`` gives the current default backend.

    The optional libraries of :mod:`p10.backends` (``"torch"``, ``"dask"``, ...) are made and
    registered on first use; a device other than the backend's gives its sibling for that
    device (``get_backend("torch", "cuda")`` is the backend ``"torch:cuda"``).

    >>> get_backend().name, get_backend("numpy", "cpu").name
    ('numpy', 'numpy')
    """
    if name is None:
        backend = getattr(_state, "current", None) or _registry["numpy"]
        if device is None or str(device) == backend.device:
            return backend
        name = backend.name.partition(":")[0]
    elif isinstance(name, Backend):
        if device is None or str(device) == name.device:
            return name
        name = name.name.partition(":")[0]
    backend = _registry.get(name)
    if backend is not None and (device is None or str(device) == backend.device):
        return backend
    for resolve in _resolvers:
        backend = resolve(name, device)
        if backend is not None:
            return backend
    known = ", ".join(_registry)
    where = f"{name!r}" if device is None else f"{name!r} on device {device!r}"
    raise BackendError(
        f"unknown backend {where}; registered backends: {known} "
        "(register a new one with p10.register_backend)"
    )


@contextmanager
def use_backend(name: str | Backend) -> Iterator[Backend]:
    """Make ``name`` the default backend of new tensors in this thread, within the block.

    >>> with use_backend("numpy") as b:
    ...     b.name
    'numpy'
    """
    backend = get_backend(name)
    previous = getattr(_state, "current", None)
    _state.current = backend
    try:
        yield backend
    finally:
        _state.current = previous


_custom_ops: dict[str, CustomOp] = {}


def define_op(
    name: str, kernel: Callable[..., Any], *, arity: int | None = 1, backend: str = "numpy"
) -> CustomOp:
    """Define a new op from user code with its kernel; run it with ``p10.apply(op, ...)``.

    The kernel is checked at definition time: it must accept ``arity`` positional arrays. The
    returned op is also the registration's handle: ``op.remove()`` undoes it.

    >>> import numpy as np, p10
    >>> softplus = define_op("softplus_doc", lambda x: np.logaddexp(x, 0.0))
    >>> p10.apply(softplus, p10.zeros(1)).tolist()
    [0.6931471824645996]
    """
    import inspect

    if not name or not name.replace("_", "").isalnum():
        raise ArgumentError(f"define_op: name must be an identifier, got {name!r}")
    if name in {op.value for op in Op} or name in _custom_ops:
        raise ArgumentError(f"define_op: an op named {name!r} exists already; choose another name")
    if not callable(kernel):
        raise DTypeError(f"define_op({name!r}): kernel must be callable, got {kernel!r}")
    if arity is not None:
        try:
            inspect.signature(kernel).bind(*range(arity))
        except TypeError as e:
            raise DTypeError(
                f"define_op({name!r}): kernel cannot take {arity} positional array(s): {e}"
            ) from None
        except ValueError:
            pass  # builtins without a signature
    op = CustomOp(name, arity)
    _custom_ops[name] = op
    get_backend(backend).kernels[op] = kernel
    return op


def op_from_name(name: str) -> OpKey:
    """The op (built-in or defined by :func:`define_op`) called ``name``.

    >>> op_from_name("add")
    <Op.ADD: 'add'>
    """
    try:
        return Op(name)
    except ValueError:
        if name in _custom_ops:
            return _custom_ops[name]
        raise ArgumentError(f"unknown op name {name!r}") from None
