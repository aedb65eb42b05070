"""Op params as JSON values, the form a trace stores (read back by ``check_view``)."""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from p10 import IndexSlot


def params_to_json(params: dict[str, Any]) -> dict[str, Any]:
    """Op params as JSON values: tuples become lists, dtypes names, slices/Ellipsis/index
    slots the forms of P10's index-key JSON, non-finite floats strings.

    >>> import numpy as np
    >>> params_to_json({"axis": (0, 1), "dtype": np.dtype("float32"), "key": (slice(1, None), ...)})
    {'axis': [0, 1], 'dtype': 'float32', 'key': [{'slice': [1, None, None]}, '...']}
    """
    return {str(k): _jsonable(v) for k, v in params.items()}


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return np.dtype(v).name
    if isinstance(v, np.generic):
        return _jsonable(v.item())
    if isinstance(v, tuple | list):
        return [_jsonable(x) for x in v]
    if isinstance(v, slice):
        return {"slice": [_jsonable(v.start), _jsonable(v.stop), _jsonable(v.step)]}
    if v is Ellipsis:
        return "..."
    if isinstance(v, IndexSlot):
        return {"tensor": v.position}
    if isinstance(v, enum.Enum):
        return _jsonable(v.value)
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)
