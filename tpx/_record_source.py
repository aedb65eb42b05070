"""Where the values of a recorded call come from, read from the Python frames.

:func:`user_line` names the user's source line of an event; :func:`creation_kind` tells an
array made from Python data or random numbers (a graph break) from one TPX or P10 made
itself; :func:`inside_asarray` and :func:`same_value` recognise a host read that is only a
copy (``p10.asarray(t, copy=True)``). Used by :mod:`tpx._record`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

import p10

_P10_DIR = os.path.dirname(os.path.abspath(p10.__file__)) + os.sep
_TPX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep + "tpx" + os.sep
_CREATION = (
    _P10_DIR + "_creation.py",
    _P10_DIR + "random.py",
    _TPX_DIR + "_creation.py",
)
_RANDOM = _P10_DIR + "random.py"


class Stop(Exception):
    """Raised inside the recorder only: the plan cannot express what the call did."""


def user_line(skip: int = 1) -> str:
    """``file:line`` of the first frame outside p10 and tpx (the user's source line)."""
    f = sys._getframe(skip)
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith(_P10_DIR) or name.startswith(_TPX_DIR)):
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


def creation_kind() -> str | None:
    """'random' when a P10 random function makes the array being created, 'data' when user
    code called a creation function (``tp.tensor``, ``tp.ones``...), None when TPX/P10 code
    made it (the ones of a backward root, a mask of a layer: fixed by the signature)."""
    f = sys._getframe(2)
    inner = None
    while f is not None:
        name = f.f_code.co_filename
        if name == _RANDOM:
            return "random"
        if not (name.startswith(_P10_DIR) or name.startswith(_TPX_DIR)):
            return "data" if inner in _CREATION else None
        inner = name
        f = f.f_back
    return None


def inside_asarray() -> bool:
    """Whether P10's ``asarray`` (a copy or cast of a tensor) is reading the value."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename == _P10_DIR + "_creation.py" and f.f_code.co_name == "asarray":
            return True
        f = f.f_back
    return False


def same_value(seen: np.ndarray, host: Any) -> bool:
    """Whether ``host`` (an array being made) holds the value ``seen`` read just before."""
    host = np.asarray(host)
    if host.shape != seen.shape:
        return False
    with np.errstate(all="ignore"):
        same = seen.astype(host.dtype)
    return bool(np.array_equal(same, host, equal_nan=host.dtype.kind in "fc"))


def host_copy(originals: tuple, dtype: np.dtype) -> Any:
    """A kernel that copies an array through the host, as ``p10.asarray(copy=True)``."""
    from_numpy, to_numpy = originals

    def copy(a: Any) -> Any:
        return from_numpy(np.array(to_numpy(a), dtype=dtype))

    return copy


def _has_array(v: Any, backend: Any) -> bool:
    if isinstance(v, (tuple, list)):
        return any(_has_array(x, backend) for x in v)
    return v.__class__ is backend.array_type or isinstance(v, np.ndarray)


def _first(a: Any) -> Any:
    if isinstance(a, (list, tuple)) and a:
        return a[0]
    return None


def _params_of(a: Any) -> list[Any]:
    groups = getattr(a, "param_groups", None)
    if isinstance(groups, list):
        return [p for g in groups for p in g.get("params", ())]
    return []
