"""JSON text of traces: `orjson <https://github.com/ijl/orjson>`_ when it is installed (the
``inspect`` extra), else the standard library; both write and accept the same strict JSON.

A 100,000-node trace is about 10 MB of JSON: the standard library encodes it in about 0.3 s,
orjson in a tenth of that; both parse it in about 0.2 s (with the collector paused): the time
goes into the ~2 million small lists, strings and ints of the node columns, which any parser
must make. What differs between the two:

- bytes: orjson writes non-ASCII characters as UTF-8 where ``json`` escapes them and may
  spell a float differently (``1e-05`` / ``0.00001``); both parse back to the same document.
- errors: a document orjson refuses is parsed again by the standard library, whose error
  (line number, reason) is the one reported; a document neither accepts is an error.

>>> loads(dumps({"a": [1, 2.5, None], "b": "x"}))
{'a': [1, 2.5, None], 'b': 'x'}
"""

from __future__ import annotations

import json
import math
from typing import Any

from tpx_inspect._schema import quote

try:  # NOTE: optional (the ``inspect`` extra): the standard library does the same, slower
    import orjson
except ImportError:  # pragma: no cover - exercised by tests that block the import
    orjson = None

__all__ = ["REFUSED", "dumps", "fast_loads", "loads", "no_constant", "strict_float"]


def dumps(doc: Any) -> bytes:
    """Compact UTF-8 JSON of ``doc`` with a final newline; ``ValueError`` for a NaN or Inf
    float with the standard library (orjson writes ``null`` for one: trace documents hold
    none, their non-finite params are strings).

    >>> dumps({"x": [1, 2]})
    b'{"x":[1,2]}\\n'
    """
    if orjson is not None:
        try:
            return orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:  # an integer past 64 bits, a subclass orjson does not write, ...
            pass
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    return (text + "\n").encode("utf-8")


def strict_float(text: str) -> float:
    """A JSON number as a float; ``ValueError`` when it is out of range (``1e400``)."""
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"the number {quote(text, 30)} is out of range")
    return v


def no_constant(text: str) -> Any:
    """Refuse ``NaN``/``Infinity`` (not JSON)."""
    raise ValueError(f"{text} is not valid JSON (strict JSON has no NaN or Infinity)")


REFUSED = object()
"""What :func:`fast_loads` returns when it has no answer."""


def fast_loads(blob: bytes) -> Any:
    """The document of ``blob`` parsed by orjson, or :data:`REFUSED` (orjson missing, or the
    text is not strict JSON: the caller parses it again to say why).

    >>> fast_loads(b'[1, 2]') in ([1, 2], REFUSED)
    True
    """
    if orjson is None:
        return REFUSED
    try:
        return orjson.loads(blob)
    except orjson.JSONDecodeError:
        return REFUSED


def loads(blob: bytes | str) -> Any:
    """The document of strict JSON ``blob``: no NaN/Infinity, no out-of-range number (orjson
    refuses both, as does the standard library path here). Raises what ``json.loads`` raises
    (``UnicodeDecodeError`` for bytes that are not UTF-8).

    >>> loads(b'{"a": 1e-7}')
    {'a': 1e-07}
    """
    doc = fast_loads(blob) if isinstance(blob, bytes) else REFUSED
    if doc is not REFUSED:
        return doc
    text = blob.decode("utf-8") if isinstance(blob, bytes) else blob
    return json.loads(text, parse_constant=no_constant, parse_float=strict_float)
