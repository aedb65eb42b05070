"""The errors of tpx_inspect: one small hierarchy, each class also a builtin."""

from __future__ import annotations


class InspectError(Exception):
    """Base of every tpx_inspect error."""


class TraceFormatError(InspectError, ValueError):
    """A trace file is corrupt, truncated, of an unknown version, or its sidecar is missing.

    >>> issubclass(TraceFormatError, ValueError)
    True
    """


class ExportError(InspectError, RuntimeError):
    """An export could not be produced (e.g. the Graphviz layout timed out)."""


class GraphvizNotFoundError(ExportError, FileNotFoundError):
    """The Graphviz binaries (``dot``) are not installed."""


class MissingDependencyError(InspectError, ImportError):
    """An optional Python package is not installed; the message names what to install.

    >>> issubclass(MissingDependencyError, ImportError)
    True
    """
