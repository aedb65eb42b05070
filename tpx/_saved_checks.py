"""Checksums of saved values: writes that the version counter cannot see, caught at backward.

The version counter sees every write made through P10 and TPX. Memory shared with another
library (``torch.as_tensor(t)``, ``torch.from_numpy(t.numpy())``, a DLPack consumer that
ignores DLPack 1.0's read-only flag) can still be written behind its back. Under
``tp.detect_anomaly()`` or ``tp.set_saved_tensor_checks(True)`` each node keeps a CRC-32 of
every value it saved, and backward compares them before the node's rule reads the values.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from tpx._errors import SavedValueError


def checksum(value: Any) -> int:
    """CRC-32 of the bytes of a saved value (a P10 tensor, or a TPX tensor a Function saved).

    >>> import p10
    >>> a, b, c = checksum(p10.ones(3)), checksum(p10.ones(3)), checksum(p10.zeros(3))
    >>> a == b, a == c
    (True, False)
    """
    raw = getattr(value, "_value", value)
    # NOTE: the backend's own array (not an export): read here, never handed out
    arr = raw._backend.to_numpy(raw._data)
    return zlib.crc32(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))


def record_checksums(node: Any) -> None:
    """Keep on ``node`` the checksum of each value it saved (None where nothing is saved)."""
    node.checksums = tuple([None if v is None else checksum(v) for v in node.saved])


def verify_checksums(node: Any) -> None:
    """Raise :class:`~tpx.SavedValueError` naming ``node`` and the value whose bytes changed
    since it was saved (called once its version counters were found unchanged)."""
    saved = node.saved
    for i, (value, expected) in enumerate(zip(saved, node.checksums)):
        if value is not None and expected is not None and checksum(value) != expected:
            raw = getattr(value, "_value", value)
            what = "its output" if i == len(saved) - 1 else f"input {i}"
            raise SavedValueError(
                f"a value saved for backward was changed behind TPX's back: {what} of "
                f"{node.name} (shape {raw.shape}, {raw.dtype.name}, saved at {node.source}) "
                f"no longer has the bytes it had when it was saved, yet no TPX or P10 in-place "
                f"op wrote to it (its version is {raw.version}). Another library wrote into "
                "its memory (torch.as_tensor / torch.from_numpy / a DLPack consumer that "
                "ignores the read-only flag); hand that code a clone() instead"
            )
