"""A float64 gradient checker: the engine's vector-Jacobian products against central differences.

Two modes, as ``torch.autograd.gradcheck`` and ``jax.test_util.check_grads``:

- ``"full"``: the whole Jacobian, one backward per output element (``tp.grad`` with a one-hot
  ``grad_outputs``) against one pair of perturbed forwards per input element;
- ``"random"``: ``v^T J u`` for a few random directions ``v`` (outputs) and ``u`` (inputs),
  one backward against two forwards each, with a fixed generator.

A mismatch raises :class:`GradcheckError` naming the op of the checked node, the input, and
(in full mode) the output and input elements that disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import p10
import tpx as tp

Fn = Callable[..., Any]


class GradcheckError(AssertionError):
    """A gradient from the engine disagrees with finite differences."""


def _tensors(arrays: Sequence[np.ndarray], wrt: Sequence[int]) -> list[Any]:
    return [tp.asarray(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]


def _forward(f: Fn, arrays: Sequence[np.ndarray], wrt: Sequence[int]) -> np.ndarray:
    """``f`` at ``arrays`` as float64 NumPy; inputs require grad so ``f`` may call ``tp.grad``."""
    out = f(*_tensors(arrays, wrt))
    return np.array(out, dtype=np.float64)


def describe(out: Any) -> str:
    """``'sin (SinBackward)'``: the op of the node that produced ``out``."""
    fn = getattr(out, "grad_fn", None)
    if fn is None:
        return "<no grad_fn>"
    return f"{fn.op.value} ({fn.name})"


def _vjp(out: Any, xs: list[Any], wrt: Sequence[int], v: np.ndarray) -> list[np.ndarray]:
    """``v^T J`` for each input in ``wrt``, through the real engine (zeros where unused)."""
    shapes = [xs[i].shape for i in wrt]
    if not out.requires_grad:
        return [np.zeros(s) for s in shapes]
    go = tp.asarray(v.reshape(out.shape).astype(out.dtype))
    grads = tp.grad(out, [xs[i] for i in wrt], go, retain_graph=True, allow_unused=True)
    return [np.zeros(s) if g is None else np.array(g, np.float64) for g, s in zip(grads, shapes)]


def analytic_jacobian(f: Fn, arrays: Sequence[np.ndarray], wrt: Sequence[int]):
    """``(label, [J_i])``: one ``(out.size, x_i.size)`` Jacobian per input, one backward per row."""
    xs = _tensors(arrays, wrt)
    out = f(*xs)
    n_out = out.numel()
    rows = [np.zeros((n_out, arrays[i].size)) for i in wrt]
    for k in range(n_out):
        onehot = np.zeros(n_out)
        onehot[k] = 1.0
        for row, g in zip(rows, _vjp(out, xs, wrt, onehot)):
            row[k] = g.ravel()
    return describe(out), rows


def numeric_jacobian(
    f: Fn, arrays: Sequence[np.ndarray], wrt: Sequence[int], eps: float
) -> list[np.ndarray]:
    """Central differences ``(f(x + eps e_j) - f(x - eps e_j)) / 2 eps``, per input element."""
    arrays = [np.array(a) for a in arrays]
    jacobians = []
    for i in wrt:
        x = arrays[i]
        cols = []
        for j in range(x.size):
            old = x.flat[j]
            x.flat[j] = old + eps
            plus = _forward(f, arrays, wrt)
            x.flat[j] = old - eps
            minus = _forward(f, arrays, wrt)
            x.flat[j] = old
            cols.append(((plus - minus) / (2 * eps)).ravel())
        out_size = cols[0].size if cols else _forward(f, arrays, wrt).size
        jacobians.append(np.stack(cols, axis=1) if cols else np.zeros((out_size, 0)))
    return jacobians


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(k) for k in np.unravel_index(flat, shape)) if shape else ()


def _compare_full(label, analytic, numeric, arrays, wrt, out_shape, atol, rtol, name) -> None:
    for i, a, n in zip(wrt, analytic, numeric):
        bad = np.abs(a - n) > atol + rtol * np.abs(n)
        if not bad.any():
            continue
        r, c = np.unravel_index(np.argmax(np.where(bad, np.abs(a - n), -1.0)), bad.shape)
        raise GradcheckError(
            f"{name}: rule of {label}: d output{list(_index(r, out_shape))} / d input {i}"
            f"{list(_index(c, arrays[i].shape))}: backward gives {a[r, c]:.6g}, finite "
            f"differences give {n[r, c]:.6g}; {int(bad.sum())} of {bad.size} Jacobian entries "
            f"differ beyond atol={atol:g}, rtol={rtol:g} (input {i} shape {arrays[i].shape}, "
            f"output shape {out_shape})"
        )


def _check_random(f, arrays, wrt, eps, atol, rtol, name, rng, n_dirs, label) -> None:
    xs = _tensors(arrays, wrt)
    out = f(*xs)
    label = label or describe(out)
    for d in range(n_dirs):
        v = rng.standard_normal(out.numel())
        us = [rng.standard_normal(arrays[i].shape) for i in wrt]
        vjps = _vjp(out, xs, wrt, v)
        analytic = sum(float(np.sum(g * u)) for g, u in zip(vjps, us))
        plus, minus = [np.array(a) for a in arrays], [np.array(a) for a in arrays]
        for i, u in zip(wrt, us):
            plus[i] = plus[i] + eps * u
            minus[i] = minus[i] - eps * u
        fd = float(np.sum(v * (_forward(f, plus, wrt) - _forward(f, minus, wrt)).ravel()))
        fd /= 2 * eps
        if abs(analytic - fd) > atol * np.sqrt(out.numel()) + rtol * abs(fd):
            raise GradcheckError(
                f"{name}: rule of {label}: along random direction {d}, v^T J u is "
                f"{analytic:.6g} from backward but {fd:.6g} from finite differences "
                f"(inputs {list(wrt)} of shapes {[arrays[i].shape for i in wrt]})"
            )


def check_vjp(
    f: Fn,
    arrays: Sequence[np.ndarray],
    *,
    wrt: Sequence[int] | None = None,
    mode: str = "full",
    eps: float = 1e-6,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    seed: int = 0,
    n_dirs: int = 3,
    name: str = "check_vjp",
    label: str | None = None,
) -> None:
    """Check the gradients of ``f`` (tpx tensors in, one tpx tensor out) at ``arrays``.

    ``wrt`` defaults to every floating input; the others are passed as constants. Failures
    name ``name`` and the rule: ``label``, or else the op of the node that produced the output.

    >>> import numpy as np, p10
    >>> check_vjp(p10.sin, [np.linspace(-1.0, 1.0, 5)])
    >>> check_vjp(lambda x: x * x, [np.ones(3)], mode="random")
    """
    arrays = [np.asarray(a) for a in arrays]
    if wrt is None:
        wrt = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    if mode == "random":
        rng = np.random.default_rng(seed)
        _check_random(f, arrays, wrt, eps, atol, rtol, name, rng, n_dirs, label)
        return
    if mode != "full":
        raise ValueError(f"check_vjp: mode must be 'full' or 'random', got {mode!r}")
    found, analytic = analytic_jacobian(f, arrays, wrt)
    numeric = numeric_jacobian(f, arrays, wrt, eps)
    out_shape = _forward(f, arrays, wrt).shape
    _compare_full(label or found, analytic, numeric, arrays, wrt, out_shape, atol, rtol, name)


def gradient_function(f: Fn, n_inputs: int, wrt: Sequence[int]) -> Fn:
    """``(*xs, v) -> concat(flatten(d<v, f(xs)>/dx_i))``, recorded with ``create_graph=True``.

    Checking this function with :func:`check_vjp` checks second derivatives (and that every
    rule is linear in its incoming gradient ``v``), as ``torch.autograd.gradgradcheck``.

    >>> import numpy as np, p10
    >>> h = gradient_function(p10.sin, 1, [0])
    >>> check_vjp(h, [np.linspace(-1.0, 1.0, 3), np.ones(3)])
    """

    def grads_of(*args: Any) -> Any:
        xs, v = args[:n_inputs], args[n_inputs]
        out = f(*xs)
        wanted = [xs[i] for i in wrt]
        grads = tp.grad(out, wanted, v, create_graph=True, allow_unused=True)
        parts = [
            p10.reshape(tp.zeros_like(x) if g is None else g, (-1,)) for g, x in zip(grads, wanted)
        ]
        return p10.concat(parts, axis=0)

    return grads_of
