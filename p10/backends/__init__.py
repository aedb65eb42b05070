"""Kernel tables. ``numpy_backend`` is the default backend and the executable spec of every op.

Optional backends run every op through the generic Array API backend
(:func:`~p10.backends.array_api_backend.make_array_api_backend`) on a library installed next to
P10: ``"array_api_strict"``, ``"torch"``, ``"dask"``, ``"cupy"`` and ``"jax"``. Importing P10
imports none of them; a backend is made and registered the first time it is asked for by name::

    p10.asarray([1.0, 2.0], backend="torch")                 # PyTorch on its default device
    p10.asarray([1.0, 2.0], backend="torch", device="cuda")  # registered as "torch:cuda"
    with p10.use_backend("dask"): ...
    t.to(backend="array_api_strict")

:func:`enable` registers one explicitly (with options such as ``extras=``) and returns a handle
whose ``remove()`` unregisters it.

>>> "numpy" in LIBRARIES, backend_name("torch", "cuda")
(False, 'torch:cuda')
"""

from __future__ import annotations

import importlib.util
from typing import Any

from p10._backend import _registry, register_backend

LIBRARIES: dict[str, str] = {
    "array_api_strict": "array_api_strict",
    "torch": "torch",
    "dask": "dask.array",
    "cupy": "cupy",
    "jax": "jax",
}
"""The libraries a backend can be made for by name, with the module each one needs."""


def backend_name(library: str, device: Any = None) -> str:
    """The registry name of ``library`` on ``device``: ``"torch"``, ``"torch:cuda"``, ..."""
    return library if device is None else f"{library}:{device}"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def available() -> list[str]:
    """The optional libraries installed here (found without importing them).

    >>> isinstance(available(), list)
    True
    """
    if not _installed("array_api_compat"):
        return []
    return [name for name, module in LIBRARIES.items() if _installed(module)]


def enable(library: str, device: Any = None, *, name: str | None = None, **options: Any) -> Any:
    """Make and register the Array API backend of ``library`` on ``device``; returns a handle.

    ``options`` go to :func:`~p10.backends.array_api_backend.make_array_api_backend`.

    >>> import p10, pytest; _ = pytest.importorskip("array_api_compat")
    >>> with enable("numpy", name="numpy_via_compat"):
    ...     p10.ones(2, backend="numpy_via_compat").tolist()
    [1.0, 1.0]
    """
    from p10.backends.array_api_backend import make_array_api_backend

    label = name or backend_name(library, device)
    return register_backend(make_array_api_backend(library, device, name=label, **options))


def resolve(name: str, device: Any = None) -> Any:
    """The backend for ``name`` (``"torch"``, ``"torch:cuda"``) and ``device``, made and
    registered on first use; ``None`` when ``name`` is no known library (used by
    :func:`p10.get_backend`)."""
    library, _, dev = name.partition(":")
    if library not in LIBRARIES:
        return None
    device = device if device is not None else (dev or None)
    if library not in _registry:
        enable(library)
    base = _registry[library]
    if device is None or str(device) == base.device:
        return base
    label = backend_name(library, device)
    if label not in _registry:
        enable(library, device, name=label)
    return _registry[label]
