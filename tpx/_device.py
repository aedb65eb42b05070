"""PyTorch-style devices: ``tp.device("cpu")``, ``t.device``, ``tp.cuda.is_available()``.

A device names where a backend keeps its arrays (``"cpu"`` for NumPy, ``"cuda:0"`` for a
Torch backend on a GPU). TPX moves tensors between devices through P10 backends; it never
picks an accelerator by itself.
"""

from __future__ import annotations

from typing import Any

from tpx import cuda
from tpx._errors import DeviceError

__all__ = ["DEVICE_TYPES", "device", "device_arg", "is_device"]

DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "xpu", "meta", "hip"})
"""The device types a string may name (``.to("cuda")`` is a device, ``.to("float32")`` not)."""


class device:
    """A device: a type (``"cpu"``, ``"cuda"``...) and an optional index.

    Compares equal to another device or to its string (``tp.device("cpu") == "cpu"``).

    >>> import tpx as tp
    >>> d = tp.device("cpu")
    >>> d, str(d), d.type, d.index, d == "cpu", tp.ones(2).device == d
    (device(type='cpu'), 'cpu', 'cpu', None, True, True)
    >>> tp.device("cuda", 1)
    device(type='cuda', index=1)
    """

    __slots__ = ("index", "type")

    def __init__(self, type: Any, index: int | None = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"tp.device: expected a string such as 'cpu', got {type!r}")
        kind, _, rest = type.partition(":")
        if kind not in DEVICE_TYPES:
            raise ValueError(
                f"tp.device: unknown device type {kind!r}; expected one of "
                f"{', '.join(sorted(DEVICE_TYPES))}"
            )
        if rest:
            if index is not None or not rest.isdigit():
                raise ValueError(f"tp.device: invalid device string {type!r}")
            index = int(rest)
        self.type, self.index = kind, index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type={self.type!r})"
        return f"device(type={self.type!r}, index={self.index})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except ValueError:
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash(str(self))


def is_device(value: Any) -> bool:
    """Whether ``value`` names a device (a :class:`device` or a string such as ``"cuda:0"``).

    >>> is_device("cpu"), is_device("float32"), is_device(device("cpu"))
    (True, False, True)
    """
    if isinstance(value, device):
        return True
    return isinstance(value, str) and value.partition(":")[0] in DEVICE_TYPES


def device_arg(value: Any, fn: str) -> str | None:
    """A ``device=`` argument as P10 takes it: None for the CPU (P10's default), else its
    string; a CUDA device gets an error that says how TPX reaches GPUs."""
    if value is None:
        return None
    d = device(value)
    if d.type == "cpu":
        return None
    if d.type == "cuda" and not cuda.is_available():
        raise DeviceError(
            f"{fn}: device {str(d)!r} is not available (tp.cuda.is_available() is False); "
            "TPX reaches a GPU through a P10 backend, e.g. .to(backend='torch', device='cuda')"
        )
    return str(d)
