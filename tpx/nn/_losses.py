"""The losses of ``tpx.nn.functional``: mean squared error, negative log-likelihood, cross
entropy from logits and binary cross entropy from logits, each composed from P10 ops."""

from __future__ import annotations

from typing import Any

import tpx as tp
from p10 import ShapeError

Tensor = tp.Tensor
_REDUCTIONS = ("mean", "sum", "none")


def _tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else tp.asarray(x)


def _reduce(loss: Tensor, reduction: str, fn: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{fn}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:
    """Mean squared error.

    >>> import tpx as tp
    >>> mse_loss(tp.asarray([1.0, 2.0]), tp.asarray([1.0, 4.0])).item()
    2.0
    """
    input, target = _tensor(input), _tensor(target)
    if input.shape != target.shape:
        raise ShapeError(f"mse_loss: input {input.shape} and target {target.shape} differ")
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")


def _class_last(input: Tensor, target: Tensor, fn: str) -> tuple[Tensor, Tensor]:
    """``(M, C)`` scores and ``(M,)`` targets from ``(N, C, d1, ...)`` and ``(N, d1, ...)``."""
    if input.ndim == 1:
        input, target = input.reshape(1, -1), target.reshape(1)
    expected = (input.shape[0], *input.shape[2:])
    if target.shape != expected:
        soft = " or a float target of the same shape (class probabilities)"
        raise ShapeError(
            f"{fn}: input of shape {input.shape} (N, C, ...) needs an integer target of shape "
            f"{expected}{soft if fn == 'cross_entropy' else ''}, got {target.shape}"
        )
    if target.dtype.kind not in "iu":
        soft = f" (or class probabilities of the input's shape {input.shape})"
        raise TypeError(
            f"{fn}: target must hold integer class indices{soft if fn == 'cross_entropy' else ''}"
            f", got {target.dtype.name}"
        )
    if input.ndim > 2:
        axes = (0, *range(2, input.ndim), 1)
        input = tp.permute_dims(input, axes)
    return input.reshape(-1, input.shape[-1]), target.reshape(-1)


def nll_loss(
    input: Any,
    target: Any,
    weight: Any = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of integer ``target`` under log-probabilities ``input`` of
    shape ``(N, C, ...)``; targets equal to ``ignore_index`` count for nothing.

    >>> import tpx as tp
    >>> nll_loss(tp.asarray([[-1.0, -2.0], [-3.0, -4.0]]), tp.asarray([1, 0])).item()
    2.5
    """
    input, target = _tensor(input), _tensor(target)
    logp, flat = _class_last(input, target, "nll_loss")
    return _nll(logp, flat, target.shape, weight, ignore_index, reduction, 0.0, "nll_loss")


def _nll(
    logp: Tensor,
    target: Tensor,
    shape: tuple,
    weight: Any,
    ignore_index: int,
    reduction: str,
    smoothing: float,
    fn: str,
) -> Tensor:
    classes = logp.shape[-1]
    valid = target != ignore_index
    safe = tp.where(valid, target, 0)
    _check_classes(safe, classes, fn)
    picked = tp.take_along_axis(logp, safe.reshape(-1, 1), axis=1).reshape(-1)
    w = valid.astype(logp.dtype)
    if weight is not None:
        weight = _tensor(weight).astype(logp.dtype)
        w = w * tp.take(weight, safe, axis=0)
    loss = -(picked * w)
    if smoothing > 0.0:
        per_class = logp if weight is None else logp * weight
        smooth = -per_class.sum(axis=-1) * valid.astype(logp.dtype)
        loss = loss * (1.0 - smoothing) + smooth * (smoothing / classes)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss.reshape(shape), reduction, fn)


def _check_classes(target: Tensor, classes: int, fn: str) -> None:
    if target.numel() and (int(target.max()) >= classes or int(target.min()) < 0):
        raise IndexError(
            f"{fn}: target holds class {int(target.max())} or {int(target.min())}, outside "
            f"[0, {classes}) for input with {classes} classes"
        )


def cross_entropy(
    input: Any,
    target: Any,
    weight: Any = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of logits ``input`` (``(N, C, ...)`` or ``(C,)``) against ``target``,
    computed through ``log_softmax`` so large logits do not overflow, as PyTorch does.

    ``target`` holds either integer class indices (shape ``(N, ...)``) or class probabilities
    ("soft" targets: floats of the same shape as ``input``). ``label_smoothing`` mixes the
    target with the uniform distribution. With soft targets ``ignore_index`` must stay
    negative, and ``"mean"`` divides by the number of batch elements, not by the weight sum.

    >>> import tpx as tp
    >>> round(cross_entropy(tp.asarray([[0.0, 0.0]]), tp.asarray([1])).item(), 4)
    0.6931
    >>> cross_entropy(tp.asarray([[1000.0, 0.0]]), tp.asarray([0])).item()
    0.0
    >>> round(cross_entropy(tp.asarray([[0.0, 0.0]]), tp.asarray([[0.3, 0.7]])).item(), 4)
    0.6931
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    input, target = _tensor(input), _tensor(target)
    if input.shape == target.shape:
        return _soft_cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)
    logits, flat = _class_last(input, target, "cross_entropy")
    logp = tp.log_softmax(logits, axis=-1)
    return _nll(
        logp, flat, target.shape, weight, ignore_index, reduction, label_smoothing, "cross_entropy"
    )


def _soft_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Any,
    ignore_index: int,
    reduction: str,
    smoothing: float,
) -> Tensor:
    """``-sum(weight_c * target_c * log_softmax(input)_c)`` over the class dim (dim 1, or 0
    for ``(C,)`` input), as PyTorch's probability-target path."""
    _check_soft(input, target, ignore_index, reduction)
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    logp = tp.log_softmax(input, axis=class_dim)
    if smoothing > 0.0:
        target = target * (1.0 - smoothing) + smoothing / classes
    terms = logp * target
    if weight is not None:
        weight = _class_weight(weight, classes, input.dtype)
        terms = terms * weight.reshape((classes,) + (1,) * (input.ndim - class_dim - 1))
    if reduction == "none":
        return -terms.sum(axis=class_dim)
    total = -terms.sum()
    if reduction == "sum":
        return total
    # NOTE: PyTorch's mean divides by the batch elements (numel / C), whatever the weights;
    # an empty batch gives nan, as there.
    batch = input.numel() // classes if classes else 0
    return total / batch if batch else total * float("nan")


def _check_soft(input: Tensor, target: Tensor, ignore_index: int, reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"cross_entropy: reduction must be one of {_REDUCTIONS}, got {reduction!r}"
        )
    if input.ndim == 0:
        raise ShapeError("cross_entropy: input must be (C,) or (N, C, ...), got a 0-d tensor")
    if target.dtype.kind != "f":
        indices = () if input.ndim == 1 else (input.shape[0], *input.shape[2:])
        raise TypeError(
            f"cross_entropy: a target of the input's shape {target.shape} holds class "
            f"probabilities and must be floating point, got {target.dtype.name}; for class "
            f"indices pass a target of shape {indices}"
        )
    if ignore_index >= 0:
        raise ValueError(
            f"cross_entropy: ignore_index={ignore_index} is not supported with class-probability "
            "(float) targets, as in PyTorch; it applies to integer class-index targets only, so "
            "leave it negative (default -100)"
        )


def _class_weight(weight: Any, classes: int, dtype: Any) -> Tensor:
    weight = _tensor(weight)
    if weight.shape != (classes,):
        raise ShapeError(
            f"cross_entropy: weight must have shape ({classes},), one entry per class, got "
            f"{weight.shape}"
        )
    return weight.astype(dtype)


def binary_cross_entropy_with_logits(
    input: Any,
    target: Any,
    weight: Any = None,
    reduction: str = "mean",
    pos_weight: Any = None,
) -> Tensor:
    """Binary cross entropy of probabilities ``sigmoid(input)`` against ``target`` in [0, 1],
    computed stably as ``(1 - y) x + l (log1p(exp(-|x|)) + max(-x, 0))`` with
    ``l = 1 + (pos_weight - 1) y``.

    >>> import tpx as tp
    >>> round(binary_cross_entropy_with_logits(tp.zeros(2), tp.ones(2)).item(), 4)
    0.6931
    >>> binary_cross_entropy_with_logits(tp.asarray([-500.0]), tp.asarray([0.0])).item()
    0.0
    """
    input, target = _tensor(input), _tensor(target)
    if input.shape != target.shape:
        raise ShapeError(
            f"binary_cross_entropy_with_logits: input {input.shape} and target "
            f"{target.shape} differ"
        )
    target = target.astype(input.dtype)
    softplus_neg = tp.log1p(tp.exp(-tp.abs(input))) + tp.relu(-input)
    if pos_weight is not None:
        softplus_neg = softplus_neg * ((_tensor(pos_weight) - 1.0) * target + 1.0)
    loss = (1.0 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")
