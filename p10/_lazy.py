"""Computing several tensors of a lazy backend together: one pass over their shared graph.

On a lazy backend (Dask) reading tensors one by one computes their shared history once per
read: the loss, then each parameter, each re-running the forward pass. :func:`materialize`
computes them in one pass and keeps the results on the backend (a cluster's workers);
:func:`fetch` computes them in one pass and returns NumPy arrays. On an eager backend (NumPy,
PyTorch) every value exists already: ``materialize`` does nothing and ``fetch`` converts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from p10._tensor import Tensor


def _groups(tensors: tuple[Any, ...], caller: str) -> dict[Any, list[int]]:
    """Positions of the lazy tensors, grouped by backend (in order of first appearance)."""
    groups: dict[Any, list[int]] = {}
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{caller}: argument {i} is a {type(t).__name__}, not a p10.Tensor")
        if t._backend.lazy:
            groups.setdefault(t._backend, []).append(i)
    return groups


def materialize(*tensors: Tensor) -> None:
    """Compute the values of lazy ``tensors`` now, in one pass over their shared graph, and
    keep them on their backend (in memory, or on a Dask cluster's workers), so that reading
    them or building on them later starts from the values instead of their history. Nothing
    is brought to this process. Does nothing to tensors of eager backends (NumPy, PyTorch).

    >>> import p10
    >>> x = p10.ones(3); materialize(x, x * 2); x.tolist()
    [1.0, 1.0, 1.0]
    """
    for backend, positions in _groups(tensors, "materialize").items():
        assert backend.persist is not None, f"lazy backend {backend.name} has no persist"
        done = backend.persist([tensors[i]._data for i in positions])
        for i, data in zip(positions, done):
            tensors[i]._data = data


def fetch(*tensors: Tensor) -> tuple[np.ndarray, ...]:
    """The values of ``tensors`` as read-only NumPy arrays, computed together: one pass over
    the shared graph of a lazy backend's tensors instead of one per tensor.

    >>> import p10
    >>> a, b = fetch(p10.ones(2), p10.zeros(1)); a.tolist(), b.tolist()
    ([1.0, 1.0], [0.0])
    """
    out: list[np.ndarray | None] = [None] * len(tensors)
    for backend, positions in _groups(tensors, "fetch").items():
        assert backend.compute is not None, f"lazy backend {backend.name} has no compute"
        for i, arr in zip(positions, backend.compute([tensors[i]._data for i in positions])):
            arr = np.asarray(arr)
            arr.flags.writeable = False
            out[i] = arr
    return tuple(t.numpy() if a is None else a for t, a in zip(tensors, out))
