"""TPX's error hierarchy: every class is also the builtin a PyTorch user would catch."""

from __future__ import annotations


class TPXError(Exception):
    """Base class of every error TPX raises."""


class MissingRuleError(TPXError, NotImplementedError):
    """An op that requires grad has no gradient rule."""


class RuleError(TPXError, RuntimeError):
    """A gradient rule returned the wrong number, shape or dtype of gradients."""


class BackwardError(TPXError, RuntimeError):
    """Backward cannot run: graph already freed, non-scalar output without ``gradient``, ..."""


class InplaceError(TPXError, RuntimeError):
    """A value needed for backward was modified by an in-place operation."""


class SavedValueError(InplaceError):
    """A value saved for backward changed without a version bump: written through memory that
    another library shares (found by the checksums of ``tp.set_saved_tensor_checks``)."""


class RequiresGradError(TPXError, RuntimeError):
    """``requires_grad`` asked of a tensor that cannot have a gradient (non-floating dtype)."""


class AnomalyError(TPXError, RuntimeError):
    """``detect_anomaly`` found a NaN or Inf; the message names the op and the source line."""


class DefinitionError(TPXError, TypeError):
    """A custom ``Function`` or rule is malformed (missing backward, wrong arity)."""


class GradAssignmentError(TPXError, TypeError, RuntimeError):
    """``x.grad = value`` with a value that is not a tensor of ``x``'s shape and dtype (a
    ``TypeError`` for a wrong type and a ``RuntimeError`` otherwise, in PyTorch)."""


class DeviceError(TPXError, RuntimeError):
    """A tensor asked for a device TPX does not have (``.to("cuda")`` without a GPU backend)."""
