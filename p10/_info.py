"""The Array API inspection namespace: ``p10.__array_namespace_info__()``.

>>> import p10
>>> info = p10.__array_namespace_info__()
>>> info.default_dtypes()["real floating"], "uint16" in info.dtypes(kind="integral")
(dtype('float32'), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from p10._backend import get_backend, list_backends
from p10._dtypes import ALL_DTYPES, default_complex_dtype, get_default_dtype, isdtype


class ArrayNamespaceInfo:
    """What this namespace supports: capabilities, devices and dtypes (Array API 2023.12).

    >>> import p10
    >>> isinstance(p10.__array_namespace_info__(), p10.ArrayNamespaceInfo)
    True
    """

    __module__ = "p10"

    def capabilities(self) -> dict[str, Any]:
        """Optional features: boolean indexing and data-dependent shapes are supported.

        >>> import p10
        >>> p10.__array_namespace_info__().capabilities()["boolean indexing"]
        True
        """
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        """The device of the current default backend ('cpu' for NumPy).

        >>> import p10
        >>> p10.__array_namespace_info__().default_device()
        'cpu'
        """
        return get_backend().device

    def devices(self) -> list[str]:
        """The devices of the registered backends, without repeats, the default first.

        >>> import p10
        >>> p10.__array_namespace_info__().devices()[0]
        'cpu'
        """
        found = [self.default_device()]
        for name in list_backends():
            device = get_backend(name).device
            if device not in found:
                found.append(device)
        return found

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        """The dtypes creation functions pick when none is given ("indexing" is for indices).

        >>> import p10
        >>> p10.__array_namespace_info__().default_dtypes()["integral"]
        dtype('int64')
        """
        return {
            "real floating": get_default_dtype(),
            "complex floating": default_complex_dtype(),
            "integral": np.dtype("int64"),
            "indexing": np.dtype("int64"),
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        """The supported dtypes by name, all of them or those of ``kind`` (as in ``isdtype``).

        >>> import p10
        >>> list(p10.__array_namespace_info__().dtypes(kind="real floating"))
        ['float32', 'float64']
        """
        return {d.name: d for d in ALL_DTYPES if kind is None or isdtype(d, kind)}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The inspection object of the Array API (``capabilities``, ``devices``, ``dtypes``...).

    >>> import p10
    >>> p10.__array_namespace_info__().default_device()
    'cpu'
    """
    return ArrayNamespaceInfo()
