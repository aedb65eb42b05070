"""The trace format's version: one constant, and what the loader does with other versions.

A trace stores ``"version": MAJOR`` and, from minor version 1 on, ``"minor": MINOR``. A minor
version only adds optional fields (node columns, keys): a trace of a newer minor version
loads, and a :class:`TraceVersionWarning` names what this reader ignored. A major version
changes what is there (version 2: node columns stored as runs); this reader reads the majors
of :data:`READS` (version 1 traces keep loading) and refuses any other with a
:class:`~tpx_inspect.errors.TraceFormatError`, as a version 1 reader refuses version 2.

>>> version_fields()
{'version': 2, 'minor': 1}
>>> check_version({"version": 2, "minor": 3}, "t.json")
3
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from tpx_inspect._schema_values import quote
from tpx_inspect.errors import TraceFormatError

FORMAT_VERSION = (2, 1)
"""(major, minor) of the traces this tpx_inspect writes, and the newest it reads fully. Minor 1:
a run may derive the previews of its kept values (``"derived_previews"``, see
``_sidecar_previews``); a 2.0 reader refuses such a run (TraceFormatError: its sidecar lacks
``r<run>.previews``). A trace that uses nothing of minor 1 is written as 2.0."""

READS = {1: 0, 2: FORMAT_VERSION[1]}
"""The major versions this tpx_inspect reads, each with the newest minor it reads fully."""


class TraceVersionWarning(UserWarning):
    """A trace of a newer minor version was loaded; its unknown fields were ignored."""


def version_fields(minor: int = FORMAT_VERSION[1]) -> dict[str, int]:
    """The version keys :func:`tpx_inspect.save` writes for a trace that needs ``minor`` (at
    most FORMAT_VERSION's; the key only from minor 1 on).

    >>> version_fields(0)
    {'version': 2}
    """
    return (
        {"version": FORMAT_VERSION[0], "minor": minor} if minor else {"version": FORMAT_VERSION[0]}
    )


def check_version(doc: dict[str, Any], path: str) -> int:
    """The minor version of ``doc``; a TraceFormatError for a major version not in READS.

    >>> check_version({"version": 3}, "t.json")
    Traceback (most recent call last):
    ...
    tpx_inspect.errors.TraceFormatError: t.json: trace format version 3 is not supported by ...
    """
    major, minor = doc.get("version"), doc.get("minor", 0)
    if type(major) is not int or major not in READS:
        raise TraceFormatError(
            f"{path}: trace format version {quote(major)} is not supported by this tpx_inspect "
            f"(it reads versions {' and '.join(map(str, READS))}); re-capture the trace or "
            "upgrade tpx_inspect"
        )
    if type(minor) is not int or minor < 0:
        raise TraceFormatError(f"{path}: 'minor' must be a non-negative integer")
    return minor


def warn_ignored(path: str, major: int, minor: int, ignored: Iterable[str]) -> None:
    """Warn that ``ignored`` (names of unknown fields) were dropped while loading ``path``
    (a trace of format ``major.minor``, a major version in READS).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_ignored("t.json", 2, 2, ["node column 'color'"])
    >>> print(w[0].message)
    t.json: trace format 2.2 is newer than this tpx_inspect reads fully (2.1); ignored: node ...
    """
    names = sorted(set(ignored))
    ours = READS[major]
    if not names and minor <= ours:
        return
    newer = (
        f"trace format {major}.{minor} is newer than this tpx_inspect reads fully ({major}.{ours})"
        if minor > ours
        else f"trace format {major}.{minor}"
    )
    what = ", ".join(names) if names else "nothing"
    warnings.warn(f"{path}: {newer}; ignored: {what}", TraceVersionWarning, stacklevel=3)
