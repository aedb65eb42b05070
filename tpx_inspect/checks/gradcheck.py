"""Whole-function gradient checks: ``gradcheck`` and ``gradgradcheck`` (central differences).

Like ``torch.autograd.gradcheck``: the analytical Jacobian from TPX's backward is compared with
central differences, element by element (full mode), or along random directions drawn from the
check's own seeded generator (fast mode, as JAX's ``check_grads``: ``u^T J v`` against
``<vjp(u), v>``). Elements agree when ``|analytical - numerical| <= atol + rtol * |numerical|``.
Run it in float64: in float32 finite differences are too coarse, so other dtypes warn.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import tpx


class GradcheckError(AssertionError):
    """Raised by :func:`gradcheck` when analytical and numerical gradients disagree.

    >>> issubclass(GradcheckError, AssertionError)
    True
    """


@dataclass(frozen=True)
class Mismatch:
    """A disagreement: which output and input, which elements, and the two values.

    >>> Mismatch(0, 1, (2,), (0,), 1.0, 0.5).message().split(", ")[1]
    'd output[0][2] / d input[1][0]: numerical 1'
    """

    output: int
    input: int
    output_element: tuple[int, ...] | None
    input_element: tuple[int, ...] | None
    numerical: float
    analytical: float
    mode: str = "full"

    def message(self) -> str:
        """A sentence naming output, input, element, numerical and analytical values."""
        if self.input_element is None:
            return (
                f"Jacobian mismatch for output {self.output} with respect to input "
                f"{self.input} along a random direction (fast mode): u^T J v numerical "
                f"{self.numerical:.8g}, analytical {self.analytical:.8g}"
            )
        out = f"output[{self.output}]{_index(self.output_element)}"
        inp = f"input[{self.input}]{_index(self.input_element)}"
        return (
            f"Jacobian mismatch for output {self.output} with respect to input {self.input}, "
            f"d {out} / d {inp}: numerical {self.numerical:.8g}, analytical "
            f"{self.analytical:.8g}"
        )


def _index(element: tuple[int, ...] | None) -> str:
    """``[2, 0]`` for an element of an array, '' for a 0-d one."""
    return f"[{', '.join(str(i) for i in element)}]" if element else ""


@dataclass(frozen=True)
class GradcheckResult:
    """What :func:`gradcheck` found; truthy when the check passed.

    >>> import tpx as tp
    >>> x = tp.asarray([0.3, 1.2], dtype=tp.float64, requires_grad=True)
    >>> bool(gradcheck(lambda t: t.sin() * t, [x]))
    True
    """

    passed: bool
    mismatches: tuple[Mismatch, ...]
    mode: str
    checked: int

    def __bool__(self) -> bool:
        return self.passed

    @property
    def message(self) -> str:
        """Every mismatch, one per line ('' when the check passed)."""
        return "\n".join(m.message() for m in self.mismatches)


@dataclass(frozen=True)
class _Problem:
    """The function with its differentiable inputs pulled out as float arrays."""

    fn: Callable[..., Any]
    inputs: tuple[Any, ...]
    diff: tuple[int, ...]

    def call(self, values: Sequence[np.ndarray] | None = None) -> tuple[Any, ...]:
        """Run fn with the differentiable inputs replaced by ``values`` (fresh leaves)."""
        args = list(self.inputs)
        if values is not None:
            for i, v in zip(self.diff, values):
                x = self.inputs[i]
                args[i] = _leaf(v, x)
        return _outputs(self.fn(*args))

    def base(self) -> list[np.ndarray]:
        """The differentiable inputs' values as NumPy arrays."""
        return [np.array(self.inputs[i].numpy()) for i in self.diff]

    def evaluate(self, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The float outputs at ``values``, as float64 arrays."""
        return [np.asarray(o.numpy(), dtype=np.float64) for o in self.call(values)]


def _leaf(value: np.ndarray, like: Any) -> Any:
    """A fresh leaf with ``value``, on ``like``'s backend and with its dtype."""
    return tpx.asarray(value, dtype=like.dtype, backend=like.backend, requires_grad=True)


def _outputs(out: Any) -> tuple[Any, ...]:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(o for o in outs if isinstance(o, tpx.Tensor) and o.dtype.kind == "f")


def _problem(fn: Callable[..., Any], inputs: Sequence[Any]) -> _Problem:
    inputs = tuple(inputs)
    diff = tuple(i for i, x in enumerate(inputs) if isinstance(x, tpx.Tensor) and x.requires_grad)
    if not diff:
        raise ValueError(
            "gradcheck: no input requires grad; pass the tensors to differentiate with "
            "requires_grad=True, e.g. tp.asarray(x, dtype=tp.float64, requires_grad=True)"
        )
    for i in diff:
        if inputs[i].dtype != np.float64:
            warnings.warn(
                f"gradcheck: input {i} is {inputs[i].dtype}, not float64; finite differences "
                "in low precision give false failures: check with .astype(tp.float64) inputs",
                UserWarning,
                stacklevel=3,
            )
    return _Problem(fn, inputs, diff)


def _vjp(problem: _Problem, us: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """``sum_o vjp_o(u_o)`` for each differentiable input (zeros where unused)."""
    leaves = [_leaf(v, problem.inputs[i]) for i, v in zip(problem.diff, problem.base())]
    args = list(problem.inputs)
    for i, leaf in zip(problem.diff, leaves):
        args[i] = leaf
    outs = _outputs(problem.fn(*args))
    pairs = [(o, u) for o, u in zip(outs, us) if u is not None and o.requires_grad]
    if not pairs:
        return [np.zeros(x.shape) for x in leaves]
    grads = tpx.grad(
        [o for o, _ in pairs],
        leaves,
        grad_outputs=[tpx.asarray(u, dtype=o.dtype, backend=o.backend) for o, u in pairs],
        allow_unused=True,
    )
    return [
        np.zeros(x.shape) if g is None else np.asarray(g.numpy(), np.float64)
        for g, x in zip(grads, leaves)
    ]


def _numerical_column(problem: _Problem, base: list, k: int, step: np.ndarray, eps: float) -> list:
    plus = [*base]
    minus = [*base]
    plus[k] = base[k] + step
    minus[k] = base[k] - step
    fp, fm = problem.evaluate(plus), problem.evaluate(minus)
    return [(a - b) / (2 * eps) for a, b in zip(fp, fm)]


def _full_pair(problem: _Problem, o: int, k: int, eps: float, atol: float, rtol: float) -> tuple:
    """The full Jacobian of output ``o`` w.r.t. differentiable input ``k``; first mismatch."""
    base = problem.base()
    shape_in = base[k].shape
    outs = problem.evaluate(base)
    shape_out = outs[o].shape
    numerical = np.zeros((outs[o].size, base[k].size))
    for j in range(base[k].size):
        step = np.zeros(base[k].size)
        step[j] = eps
        numerical[:, j] = _numerical_column(problem, base, k, step.reshape(shape_in), eps)[
            o
        ].ravel()
    analytical = np.zeros_like(numerical)
    for r in range(outs[o].size):
        us: list[np.ndarray | None] = [None] * len(outs)
        us[o] = np.zeros(outs[o].size)
        us[o][r] = 1.0
        us[o] = us[o].reshape(shape_out)
        analytical[r] = _vjp(problem, us)[k].ravel()
    bad = np.argwhere(np.abs(analytical - numerical) > atol + rtol * np.abs(numerical))
    if not len(bad):
        return None, numerical.size
    r, j = (int(v) for v in bad[0])
    m = Mismatch(
        o, problem.diff[k], tuple(int(v) for v in np.unravel_index(r, shape_out)),
        tuple(int(v) for v in np.unravel_index(j, shape_in)), float(numerical[r, j]),
        float(analytical[r, j]),
    )  # fmt: skip
    return m, numerical.size


def _fast_pair_checks(problem: _Problem, eps: float, atol: float, rtol: float, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    base = problem.base()
    outs = problem.evaluate(base)
    us = [_unit(rng.standard_normal(o.shape)) for o in outs]
    vs = [_unit(rng.standard_normal(b.shape)) for b in base]
    grads = _vjp(problem, us)
    failing = []
    for k, v in enumerate(vs):
        column = _numerical_column(problem, base, k, v * eps, eps)
        for o, u in enumerate(us):
            numerical = float(np.sum(u * column[o]))
            analytical = float(np.sum(grads[k] * v))
            if abs(analytical - numerical) > atol + rtol * abs(numerical):
                failing.append(
                    Mismatch(o, problem.diff[k], None, None, numerical, analytical, "fast")
                )
    return failing, len(vs) * len(us)


def _unit(x: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(x))
    return x / norm if norm > 0 else x


def gradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    fast_mode: bool = False,
    seed: int = 0,
    raise_exception: bool = True,
) -> GradcheckResult:
    """Check the gradients of ``fn(*inputs)`` against central differences.

    Inputs that are ``tpx.Tensor`` with ``requires_grad`` are differentiated; others pass
    through. ``fast_mode`` compares ``u^T J v`` for random unit ``u``, ``v`` from a generator
    seeded with ``seed`` and, on a failure, computes the full Jacobian of the failing pair to
    name the element. Raises :class:`GradcheckError` on failure unless ``raise_exception``
    is false; returns a truthy :class:`GradcheckResult` otherwise.

    >>> import tpx as tp
    >>> x = tp.asarray([[0.5, -1.0], [2.0, 0.1]], dtype=tp.float64, requires_grad=True)
    >>> w = tp.asarray([1.0, 2.0], dtype=tp.float64, requires_grad=True)
    >>> gradcheck(lambda a, b: (a @ b).tanh(), [x, w]).passed
    True
    >>> gradcheck(lambda a, b: (a @ b).tanh(), [x, w], fast_mode=True).mode
    'fast'
    """
    problem = _problem(fn, inputs)
    mismatches: list[Mismatch] = []
    checked = 0
    n_out = len(problem.evaluate(problem.base()))
    if n_out == 0:
        raise ValueError("gradcheck: fn returned no floating tpx.Tensor to differentiate")
    if fast_mode:
        failing, checked = _fast_pair_checks(problem, eps, atol, rtol, seed)
        for f in failing:
            mismatches.append(f)
            located, _ = _full_pair(problem, f.output, problem.diff.index(f.input), eps, atol, rtol)
            if located is not None:
                mismatches.append(located)
    else:
        for o in range(n_out):
            for k in range(len(problem.diff)):
                located, n = _full_pair(problem, o, k, eps, atol, rtol)
                checked += n
                if located is not None:
                    mismatches.append(located)
    result = GradcheckResult(
        not mismatches, tuple(mismatches), "fast" if fast_mode else "full", checked
    )
    if not result.passed and raise_exception:
        raise GradcheckError(
            f"gradcheck failed ({result.mode} mode, eps={eps}, atol={atol}, rtol={rtol}):\n"
            + result.message
        )
    return result


def gradgradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    grad_outputs: Sequence[Any] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    fast_mode: bool = False,
    seed: int = 0,
    raise_exception: bool = True,
) -> GradcheckResult:
    """Check second derivatives: :func:`gradcheck` of ``(inputs, u) -> vjp(fn)(inputs)(u)``.

    The cotangents ``u`` (``grad_outputs``, random from ``seed`` when not given) are inputs of
    the checked function too, as in PyTorch; input indices past ``len(inputs)`` name them.

    >>> import tpx as tp
    >>> x = tp.asarray([0.3, 1.2], dtype=tp.float64, requires_grad=True)
    >>> gradgradcheck(lambda t: (t.sin() * t).sum(), [x]).passed
    True
    """
    problem = _problem(fn, inputs)
    outs = problem.call()
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [_leaf(rng.standard_normal(o.shape), o) for o in outs]
    n = len(problem.inputs)

    def first_derivative(*args: Any) -> tuple[Any, ...]:
        xs, us = args[:n], args[n:]
        outs = _outputs(fn(*xs))
        diff = [xs[i] for i in problem.diff]
        pairs = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
        grads = tpx.grad(
            [o for o, _ in pairs], diff, [u for _, u in pairs], create_graph=True,
            allow_unused=True,
        )  # fmt: skip
        return tuple(tpx.zeros_like(x) if g is None else g for g, x in zip(grads, diff))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # _problem above warned already
        return gradcheck(
            first_derivative, [*problem.inputs, *grad_outputs], eps=eps, atol=atol, rtol=rtol,
            fast_mode=fast_mode, seed=seed, raise_exception=raise_exception,
        )  # fmt: skip
