"""One generic P10 backend for every library that implements the Python Array API standard.

:func:`make_array_api_backend` builds a :class:`p10.Backend` whose kernels call only functions of
the standard, through the namespace that ``array_api_compat.array_namespace`` gives for the
library (array-api-strict, PyTorch, Dask, CuPy, JAX, NumPy). Every kernel matches the NumPy
spec backend: mixed dtypes are promoted by NumPy's table first (the standard leaves int/float
mixes undefined), and reductions return NumPy's dtypes.

Kernels outside the standard get, in this order:

1. a library-specific kernel from an *extras* table (``torch_extras``, ``dask_extras``, or the
   ``extras=`` argument), e.g. ``torch.nn.functional.conv2d`` or a lazy ``map_blocks`` erf;
2. a composition of standard functions (conv2d, pooling, unfold/fold, pad, tile, gathers and
   scatters through a flat index) in :mod:`p10.backends.array_api_nn` and
   :mod:`p10.backends.array_api_index`;
3. on a CPU device only, a *host fallback*: the NumPy spec kernel run on a copy of the inputs
   (``erf`` and ``einsum`` on array-api-strict). On an accelerator the op raises
   :class:`p10.MissingKernelError` naming op and backend instead of copying silently.

Importing this module imports neither the libraries nor ``array_api_compat``; the factory does.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from p10._backend import Backend
from p10._errors import BackendError
from p10._ops import Op
from p10.backends import array_api_index
from p10.backends.array_api_kernels import Kernel, Lib, dtype_tables, generic_kernels

__all__ = ["Lib", "generic_kernels", "make_array_api_backend", "namespace_of"]


# -- the factory -------------------------------------------------------------------------------
def namespace_of(xp_or_name: ModuleType | str) -> ModuleType:
    """The ``array_api_compat`` namespace of a library given by module or import name.

    >>> import pytest; _ = pytest.importorskip("array_api_compat")
    >>> namespace_of("numpy").__name__
    'array_api_compat.numpy'
    """
    try:
        import array_api_compat
    except ImportError:
        raise BackendError(
            "array API backends need the array-api-compat package; "
            'pip install "tpx[backends]" (in a checkout: pip install -r requirements-backends.txt)'
        ) from None
    if isinstance(xp_or_name, str):
        module = {"dask": "dask.array", "jax": "jax.numpy"}.get(xp_or_name, xp_or_name)
        try:
            xp_or_name = importlib.import_module(module)
        except ImportError as e:
            raise BackendError(
                f"array API backend '{xp_or_name}': cannot import {module} ({e}); install it: "
                'pip install "tpx[backends]" (PyTorch: a CPU build, see the README\'s Install)'
            ) from None
    probe = xp_or_name.asarray([0])
    return array_api_compat.array_namespace(probe)


def make_array_api_backend(
    xp_or_name: ModuleType | str,
    device: Any = None,
    *,
    name: str | None = None,
    extras: dict[Op, Kernel] | None = None,
    host_fallback: bool | None = None,
) -> Backend:
    """A :class:`p10.Backend` running every op through the Array API namespace of a library.

    ``xp_or_name`` is a module ("array_api_strict", "torch", "dask", "cupy", "jax", "numpy" or
    the module itself); ``device`` one of the library's devices (``None``: its default).
    ``extras`` adds or replaces kernels (see :mod:`p10.backends.torch_extras`). The backend is
    not registered; pass it to :func:`p10.register_backend` or use :func:`p10.backends.enable`.

    >>> import p10, pytest; _ = pytest.importorskip("array_api_compat")
    >>> b = make_array_api_backend("numpy", name="compat_numpy")
    >>> with p10.register_backend(b):
    ...     x = p10.asarray([[1.0, -2.0]], backend="compat_numpy")
    ...     x.relu().sum().item(), type(x._data).__name__
    (1.0, 'ndarray')
    """
    xp = namespace_of(xp_or_name)
    label = name or _library_name(xp)
    try:
        lib = _make_lib(xp, device, label)
        array_type = type(lib.from_numpy(np.zeros(1, np.float32)))
    except Exception as e:
        raise BackendError(f"backend '{label}': cannot use device {device!r}: {e}") from e
    if host_fallback is not None:
        lib.cpu = host_fallback
    return Backend(
        name=label,
        kernels=generic_kernels(lib, _library_extras(lib, extras)),
        array_type=array_type,
        from_numpy=lib.from_numpy,
        to_numpy=lib.to_numpy,
        dtype_of=lib.dtype,
        setitem=_setitem,
        may_share_memory=_may_share_memory(lib),
        device="cpu" if lib.cpu else str(lib.device),
        lazy=lib.persist is not None,
        persist=lib.persist,
        compute=lib.compute,
    )


def _library_name(xp: ModuleType) -> str:
    short = xp.__name__.removeprefix("array_api_compat.")
    return {"dask.array": "dask", "jax.numpy": "jax"}.get(short, short)


def _make_lib(xp: ModuleType, device: Any, label: str) -> Lib:
    import array_api_compat

    np_of, xp_of = dtype_tables(xp)
    default = array_api_compat.device(xp.asarray([0]))
    on_cpu = "cpu" in str(default).lower()
    dev = default if device is None or (str(device) == "cpu" and on_cpu) else device
    lib = Lib(xp, dev, label, np_of, xp_of)
    extras_module = _extras_module(_library_name(xp))
    if extras_module is not None:
        extras_module.configure(lib)
    else:
        lib.from_numpy = lambda a: xp.asarray(a, device=dev, copy=True)
        lib.to_numpy = _generic_to_numpy
        lib.cpu = "cpu" in str(dev).lower()
    return lib


def _library_extras(lib: Lib, extras: dict[Op, Kernel] | None) -> dict[Op, Kernel]:
    table: dict[Op, Kernel] = {}
    kind = _library_name(lib.xp)
    module = _extras_module(kind)
    if module is not None:
        table.update(module.kernels(lib))
    elif kind in _SPECIAL_ERF:  # NOTE: written for GPU machines; not run by the tests here
        table[Op.ERF] = importlib.import_module(_SPECIAL_ERF[kind]).erf
    table.update(extras or {})
    return table


# Library -> its module of library-specific kernels, with ``configure(lib)`` (array conversions,
# devices) and ``kernels(lib)`` (kernels over the standard ones); imported on first use.
EXTRAS_MODULES = {"torch": "p10.backends.torch_extras", "dask": "p10.backends.dask_extras"}
# Library -> the module of its erf (not in the standard), for libraries without an extras module
_SPECIAL_ERF = {"cupy": "cupyx.scipy.special", "jax": "jax.scipy.special"}


def _extras_module(kind: str) -> ModuleType | None:
    name = EXTRAS_MODULES.get(kind)
    return None if name is None else importlib.import_module(name)


def _generic_to_numpy(a: Any) -> np.ndarray:
    get = getattr(a, "get", None)
    if callable(get):  # CuPy copies device arrays to the host with .get()
        return np.asarray(get())
    try:
        return np.from_dlpack(a)
    except (TypeError, RuntimeError, BufferError, AttributeError):
        return np.asarray(a)


def _setitem(dst: Any, key: Any, value: Any) -> None:
    if type(key) is tuple and any(type(k) is not slice and hasattr(k, "shape") for k in key):
        dst[key] = value  # an advanced key: passed on as it is
    else:
        dst[array_api_index.full_key(key)] = value


def _may_share_memory(lib: Lib) -> Callable[[Any, Any], bool]:
    if lib.may_share is not None:
        return lib.may_share

    def share(a: Any, b: Any) -> bool:
        try:
            return bool(np.may_share_memory(lib.to_numpy(a), lib.to_numpy(b)))
        except (TypeError, ValueError, BufferError, RuntimeError):
            return True  # unknown: share the version counter, the safe side

    return share
