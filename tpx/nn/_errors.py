"""Errors of ``tpx.nn``: each class is also the builtin a PyTorch user would catch."""

from __future__ import annotations

from p10 import ShapeError
from tpx._errors import TPXError


class NNError(TPXError):
    """Base class of every error ``tpx.nn`` and ``tpx.optim`` raise."""


class LayerShapeError(NNError, ShapeError):
    """A tensor of the wrong shape reached a layer; the message names the layer's path."""


class StateDictError(NNError, RuntimeError):
    """A state dict with missing, unexpected or mis-shaped entries (the message lists them)."""
