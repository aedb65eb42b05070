"""Saving and loading state dicts as ``.npz`` files (plain arrays, never pickle)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def state_report(owner: str, missing: list, unexpected: list, misshaped: list) -> str:
    """The message of a failed ``load_state_dict``: every missing, unexpected and mis-shaped
    key, and the fix."""
    parts = [f"load_state_dict into {owner} failed:"]
    if missing:
        parts.append(f"missing keys: {', '.join(missing)}")
    if unexpected:
        parts.append(f"unexpected keys: {', '.join(unexpected)}")
    if misshaped:
        parts.append(f"mis-shaped keys: {'; '.join(misshaped)}")
    parts.append("(pass strict=False to load a matching subset; shapes must always match)")
    return "\n  ".join(parts)


def save(state: Any, path: Any) -> None:
    """Write a module's ``state_dict()`` (or a dict of arrays) at ``path`` exactly (a path or
    an open binary file), in NumPy's ``.npz`` format, no pickle.

    >>> import os, tempfile, tpx.nn as nn
    >>> f = os.path.join(tempfile.mkdtemp(), "m.npz")
    >>> a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    >>> nn.save(a, f); _ = b.load_state_dict(nn.load(f)); bool((a.bias == b.bias).all())
    True
    """
    arrays = state.state_dict() if hasattr(state, "state_dict") else state
    values = {k: np.asarray(v) for k, v in arrays.items()}
    if hasattr(path, "write"):
        np.savez(path, **values)
        return
    # NOTE: through an open file, so the file is written at exactly `path` ("model.pt"), where
    # np.savez would append ".npz" to a name without it
    with open(os.fspath(path), "wb") as f:
        np.savez(f, **values)


def load(path: Any) -> dict[str, np.ndarray]:
    """Read a state dict written by :func:`save` at ``path`` (``np.load`` with
    ``allow_pickle=False``); the values are NumPy arrays, which ``load_state_dict`` takes."""
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
