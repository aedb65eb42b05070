"""What ``Module`` does with its parameters and buffers as a whole: move them to a dtype or
device (``to``, ``double``, ...) and save or restore them (``state_dict``, ``load_state_dict``).
A mixin of :class:`tpx.nn.Module`, which provides ``modules()`` and ``named_modules()``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

import p10
import tpx as tp
from tpx._device import device_arg
from tpx._tensor import _to_args
from tpx.nn._errors import StateDictError
from tpx.nn.serialization import state_report


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class ModuleState:
    """``to`` and the state dict of a :class:`tpx.nn.Module` (a mixin)."""

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """Move every floating parameter and buffer to a dtype and/or device, as PyTorch's
        ``Module.to(dtype | device | tensor)``: parameters stay the same objects (their
        ``.data`` changes), so an optimizer built before still holds them; returns self.

        >>> import tpx as tp, tpx.nn as nn
        >>> m = nn.Linear(2, 2); w = m.weight
        >>> m.to(tp.float64).weight.dtype, m.weight is w, m.to("cpu") is m
        (dtype('float64'), True, True)
        """
        dtype, dev, backend = _to_args(args, dict(kwargs))
        if dev is not None and backend is None:
            device_arg(dev, "Module.to")  # the CPU passes; a CUDA device raises, naming why
        if dtype is None:
            return self
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None and p.dtype.kind == "f":
                    p.data = p.detach().astype(dtype)
                    if p.grad is not None:
                        p.grad = p.grad.astype(dtype)
            for name, b in m._buffers.items():
                if b is not None and b.dtype.kind == "f":
                    m._buffers[name] = b.detach().astype(dtype)
        return self

    def cpu(self) -> Any:
        """The module on the CPU, where it is: returns self."""
        return self.to("cpu")

    def double(self) -> Any:
        """``to(tp.float64)``."""
        return self.to(tp.float64)

    def float(self) -> Any:
        """``to(tp.float32)``."""
        return self.to(tp.float32)

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every parameter and persistent buffer as NumPy arrays, keyed by dotted
        name; save it with :func:`tpx.nn.save`.

        >>> import tpx.nn as nn
        >>> {k: v.shape for k, v in nn.Linear(3, 2).state_dict().items()}
        {'weight': (2, 3), 'bias': (2,)}
        """
        out: dict[str, np.ndarray] = {}
        for path, module in self.named_modules():
            for name, value in _state_items(module):
                out[f"{path}.{name}" if path else name] = np.array(value.numpy(), copy=True)
        return out

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> _IncompatibleKeys:
        """Copy values from ``state`` into the parameters and buffers, in place.

        With ``strict`` (the default) missing, unexpected or mis-shaped keys raise
        :class:`StateDictError` listing all of them; otherwise the missing and unexpected keys
        are returned (mis-shaped ones always raise).

        >>> import tpx.nn as nn
        >>> a, b = nn.Linear(3, 2), nn.Linear(3, 2)
        >>> b.load_state_dict(a.state_dict())
        _IncompatibleKeys(missing_keys=[], unexpected_keys=[])
        >>> bool((a.weight == b.weight).all())
        True
        """
        own = self._state_tensors()
        optional = self._optional_state_keys()
        missing = [k for k in own if k not in state and k not in optional]
        unexpected = [k for k in state if k not in own]
        misshaped = [
            f"{k}: expected {own[k].shape}, got {tuple(np.shape(state[k]))}"
            for k in own
            if k in state and tuple(np.shape(state[k])) != own[k].shape
        ]
        if misshaped or (strict and (missing or unexpected)):
            raise StateDictError(state_report(type(self).__name__, missing, unexpected, misshaped))
        with tp.no_grad():
            for key, target in own.items():
                if key in state:
                    value = np.asarray(state[key]).astype(target.dtype, copy=False)
                    target.copy_(p10.asarray(value))
        return _IncompatibleKeys(missing, unexpected)

    def _state_tensors(self) -> dict[str, tp.Tensor]:
        out = {}
        for path, module in self.named_modules():
            for name, value in _state_items(module):
                out[f"{path}.{name}" if path else name] = value
        return out

    def _optional_state_keys(self) -> set[str]:
        return {
            f"{path}.{name}" if path else name
            for path, module in self.named_modules()
            for name in module._optional_state
        }


def _state_items(module: Any) -> Iterator[tuple[str, tp.Tensor]]:
    for name, p in module._parameters.items():
        if p is not None:
            yield name, p
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent:
            yield name, b
