"""The mixin shared by ``p10.Tensor`` and tensors of layers above (TPX).

Its operators and PyTorch-style methods call P10 functions; the function modules need the
``Tensor`` class, so those methods are installed on this class by :mod:`p10._tensor_api` once
every function exists. What is written here needs no function. A class using the mixin
provides ``shape``, ``ndim``, ``dtype``, ``item()``, ``to(device=)``, ``_assign(value)`` (in-place
write of a same-shaped result) and ``_setitem(key, value)``.
"""

from __future__ import annotations

from typing import Any


class TensorMethods:
    """Python operators and PyTorch-style methods, all defined through P10 functions."""

    __slots__ = ()
    __hash__ = object.__hash__  # tensors stay usable as dict keys despite elementwise __eq__

    def __setitem__(self, key: Any, value: Any) -> None:
        self._setitem(key, value)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        """This tensor on ``device`` (itself when already there); Array API name of ``to``.

        >>> import p10
        >>> p10.ones(2).to_device("cpu").device
        'cpu'
        """
        if stream is not None:
            raise ValueError(f"to_device: stream must be None on host backends, got {stream!r}")
        return self.to(device=device)

    # -- Python scalars -----------------------------------------------------------------------
    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self.ndim:
            raise TypeError(f"only 0-d integer tensors can be used as an index, not {self.dtype}")
        return int(self.item())
