"""Every gradient rule, one entry per differentiable op, in :class:`p10.Op` order.

A rule is ``vjp(ctx, g) -> tuple`` with one gradient (or None) per input; it computes the
vector-Jacobian product with P10 functions, so the same code runs on P10 values in a plain
backward and on TPX tensors (recorded again) under ``create_graph=True``. Each gradient has its
input's shape (broadcasting is undone by :func:`unbroadcast`) and dtype (a float32 input next
to a float64 one gets a float32 gradient). ``tests/tpx/test_rules.py`` checks every rule
against central finite differences in float64, first and second order.

Conventions, as PyTorch unless marked:

- ``relu'(0) = 0``, ``abs'(0) = 0``; ``sign`` (of real values), ``floor``, ``ceil``, ``round``
  and ``floor_divide`` have zero gradient (complex values: :mod:`tpx._complex_rules`); ``mod``
  passes ``g`` to x and ``-g * floor(x / y)`` to y.
- ``trunc`` has zero gradient; ``copysign`` sends nothing to its sign source; ``nextafter``
  passes ``g`` to x1 and nothing to x2 (PyTorch has no rule for it).
- ``clip`` passes the gradient where ``min <= x <= max`` (bounds included).
- ``pow``: ``d/dx x**0 = 0`` even at ``x = 0``; ``d/dy x**y`` is 0 at ``x = 0`` (no NaN from
  ``log(0)``); negative bases give NaN for the exponent's gradient, as the real log does.
- ``prod`` with zeros: only a lone zero of its row gets a gradient (the product of the others);
  under ``create_graph`` the product of the others is formed for every element (O(n^2) per
  reduced row, only when the input holds zeros) so that second derivatives stay exact.
- ``max``/``min`` (reductions) and ``maximum``/``minimum`` split the gradient evenly between
  tied elements. Deviations: along an axis and in ``max_pool2d`` ties split evenly too, where
  PyTorch's ``max(dim)`` and ``max_pool2d`` send it to one element; ``relu`` of NaN gives a NaN
  gradient (PyTorch passes ``g``).
- ``index_put`` with repeated indices: only the write that lands (NumPy: the last) sends a
  gradient to its value; the overwritten positions of the base get none.
- ``einsum`` supports repeated labels (``"ii->"``, ``"ii->i"``), ``...`` and size-1
  broadcasting of explicit labels.
"""

from __future__ import annotations

import copyreg
import math
import string
from typing import Any

import p10
from p10 import Op
from tpx._complex_rules import RULES as COMPLEX_RULES
from tpx._complex_rules import conjugate_rules
from tpx._fft_rules import RULES as FFT_RULES
from tpx._graph import Rule, RuleContext
from tpx._linalg_rules import RULES as LINALG_RULES

Grads = tuple[Any, ...]
P10Tensor = p10.Tensor


def unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``g`` over the axes that broadcasting added or stretched, back to ``shape``.

    >>> unbroadcast(p10.ones((4, 2, 3)), (2, 1)).tolist()
    [[12.0], [12.0]]
    """
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    stretched = tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    if not stretched:
        # NOTE: only leading axes were added (a bias): one sum gives the exact shape in fresh
        # memory, which a leaf then takes as its .grad without a copy (a reshape would be a view)
        return p10.apply(Op.SUM, g, axis=tuple(range(lead)), keepdims=False)
    g = p10.apply(Op.SUM, g, axis=tuple(range(lead)) + stretched, keepdims=True)
    return _reshape_to(g, shape)


# NOTE: the helpers below call the ops directly with parameters that are valid by construction,
# skipping the argument checks of the public functions: they run once per node of a backward.
def _reshape_to(g: Any, shape: tuple[int, ...]) -> Any:
    return g if g.shape == shape else p10.apply(Op.RESHAPE, g, shape=shape)


def _broadcast(g: Any, shape: tuple[int, ...]) -> Any:
    return g if g.shape == shape else p10.apply(Op.BROADCAST_TO, g, shape=shape)


def _slice(g: Any, key: tuple) -> Any:
    return p10.apply(Op.GETITEM, g, key=key)


def _fit(ctx: RuleContext, grads: Grads) -> Grads:
    """Each gradient in its input's dtype: next to a float64 input, a float32 input still gets
    a float32 gradient (the output and its gradient are float64); non-float inputs get None."""
    meta = ctx.input_meta
    for g, (_, dt) in zip(grads, meta):
        # NOTE: the backend array's dtype object first (identity, cheap), P10's only to confirm
        if (
            g is not None
            and (g.__class__ is not P10Tensor or g._data.dtype is not dt)
            and g.dtype != dt
        ):
            break
    else:
        return grads
    return tuple(_cast_to(g, dt) for g, (_, dt) in zip(grads, meta))


def _cast_to(g: Any, dtype: Any) -> Any:
    if g is None or g.dtype == dtype:
        return g
    return p10.astype(g, dtype) if dtype.kind in "fc" else None


def _zeros(ctx: RuleContext, i: int, like: Any) -> Any:
    return p10.zeros(ctx.input_shapes[i], dtype=ctx.input_dtypes[i], backend=like.backend)


def _keep(g: Any, ctx: RuleContext) -> Any:
    """The gradient of a reduction in a shape that broadcasts against the input: as with
    ``keepdims=True``, or 0-d for a full reduction (it broadcasts as it is)."""
    axis, shape = ctx.params.get("axis"), ctx.input_shapes[0]
    if axis is None or ctx.params.get("keepdims"):
        return g
    kept = tuple(1 if i in axis else s for i, s in enumerate(shape))
    return _reshape_to(g, kept)


def _reduced_count(ctx: RuleContext) -> int:
    axis, shape = ctx.params.get("axis"), ctx.input_shapes[0]
    return math.prod(shape) if axis is None else math.prod(shape[a] for a in axis)


# NOTE: the hot rules avoid Python scalars (`1 - out`): converting a scalar costs more than a
# whole (4, 4) tensor op in P10, and these rules run once per node of every backward.
# -- elementwise unary ---------------------------------------------------------------------------
def _neg(ctx: RuleContext, g: Any) -> Grads:
    return (-g,)


def _abs(ctx: RuleContext, g: Any) -> Grads:
    return (g * p10.sign(ctx.inputs[0]),)


def _exp(ctx: RuleContext, g: Any) -> Grads:
    return (g * ctx.output,)


def _log(ctx: RuleContext, g: Any) -> Grads:
    return (g / ctx.inputs[0],)


def _log1p(ctx: RuleContext, g: Any) -> Grads:
    return (g / (ctx.inputs[0] + 1),)


def _expm1(ctx: RuleContext, g: Any) -> Grads:
    return (g * ctx.output + g,)


def _sqrt(ctx: RuleContext, g: Any) -> Grads:
    out = ctx.output
    return (g / (out + out),)


def _square(ctx: RuleContext, g: Any) -> Grads:
    gx = g * ctx.inputs[0]
    return (gx + gx,)


def _reciprocal(ctx: RuleContext, g: Any) -> Grads:
    out = ctx.output
    return (-g * out * out,)


def _sin(ctx: RuleContext, g: Any) -> Grads:
    return (g * p10.cos(ctx.inputs[0]),)


def _cos(ctx: RuleContext, g: Any) -> Grads:
    return (-g * p10.sin(ctx.inputs[0]),)


def _tan(ctx: RuleContext, g: Any) -> Grads:
    out = ctx.output
    return (g + g * out * out,)


def _tanh(ctx: RuleContext, g: Any) -> Grads:
    out = ctx.output
    return (g - g * out * out,)


def _sigmoid(ctx: RuleContext, g: Any) -> Grads:
    gout = g * ctx.output
    return (gout - gout * ctx.output,)


def _relu(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: relu'(0) = 0, as PyTorch: the mask is where the output is positive (a NaN input
    # gives a NaN output and no gradient: anomaly mode reports the NaN in the forward).
    return (g * (ctx.output > 0),)


def _gelu(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    if ctx.params.get("approximate") == "tanh":
        k = math.sqrt(2.0 / math.pi)
        inner = (x + x * x * x * 0.044715) * k
        t = p10.tanh(inner)
        dinner = (x * x * (3 * 0.044715) + 1) * k
        return (g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner),)
    cdf = (p10.erf(x * (1 / math.sqrt(2.0))) + 1) * 0.5
    pdf = p10.exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
    return (g * (cdf + x * pdf),)


def _erf(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    return (g * p10.exp(-(x * x)) * (2 / math.sqrt(math.pi)),)


def _zero_grad(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: sign, floor, ceil, round and floor_divide are piecewise constant: zero gradient.
    return tuple(_zeros(ctx, i, g) for i in range(len(ctx.input_shapes)))


def _clip(ctx: RuleContext, g: Any) -> Grads:
    x, lo, hi = ctx.inputs[0], ctx.params.get("min"), ctx.params.get("max")
    inside = None
    if lo is not None:
        inside = x >= lo
    if hi is not None:
        inside = (x <= hi) if inside is None else p10.logical_and(inside, x <= hi)
    return (g if inside is None else p10.where(inside, g, 0.0),)


def _cast(ctx: RuleContext, g: Any) -> Grads:
    return (p10.astype(g, ctx.input_dtypes[0]),)


def _copy(ctx: RuleContext, g: Any) -> Grads:
    return (g,)


# -- elementwise binary and ternary --------------------------------------------------------------
def _add(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: skipping unneeded sides saves a sum per node in `x + 1.0`
    n0, n1 = ctx.needs_input_grad
    m0, m1 = ctx.input_meta
    g0 = unbroadcast(g, m0[0]) if n0 else None
    g1 = unbroadcast(g, m1[0]) if n1 else None
    if _same_dtype(g, m0, m1):
        return (g0, g1)
    return _fit(ctx, (g0, g1))


def _sub(ctx: RuleContext, g: Any) -> Grads:
    n0, n1 = ctx.needs_input_grad
    m0, m1 = ctx.input_meta
    g0 = unbroadcast(g, m0[0]) if n0 else None
    g1 = unbroadcast(-g, m1[0]) if n1 else None
    return _fit(ctx, (g0, g1))


def _mul(ctx: RuleContext, g: Any) -> Grads:
    x, y = ctx.inputs
    n0, n1 = ctx.needs_input_grad
    m0, m1 = ctx.input_meta
    gx = unbroadcast(g * y, m0[0]) if n0 else None
    gy = unbroadcast(g * x, m1[0]) if n1 else None
    if _same_dtype(g, m0, m1):
        return (gx, gy)
    return _fit(ctx, (gx, gy))


def _same_dtype(g: Any, m0: tuple, m1: tuple) -> bool:
    """Whether both inputs have the dtype of ``g`` (then no gradient needs :func:`_fit`)."""
    dt = m0[1]
    return m1[1] is dt and g.__class__ is P10Tensor and g._data.dtype is dt


def _div(ctx: RuleContext, g: Any) -> Grads:
    (x, y), (n0, n1) = ctx.inputs, ctx.needs_input_grad
    s0, s1 = ctx.input_shapes
    gx = unbroadcast(g / y, s0) if n0 else None
    gy = unbroadcast(-g * x / (y * y), s1) if n1 else None
    return _fit(ctx, (gx, gy))


def _pow(ctx: RuleContext, g: Any) -> Grads:
    (x, y), (n0, n1) = ctx.inputs, ctx.needs_input_grad
    s0, s1 = ctx.input_shapes
    gx = gy = None
    if n0:
        # NOTE: the gradient is 0 where the exponent is 0, even at x = 0, as PyTorch. The
        # exponent is made safe first so that 0 ** -1 never appears: an inf in the unused
        # branch of a where would give NaN second derivatives.
        zero_exp = y == 0
        safe_y = p10.where(zero_exp, 1.0, y)
        gx = unbroadcast(p10.where(zero_exp, 0.0, g * safe_y * x ** (safe_y - 1)), s0)
    if n1:
        # NOTE: d/dy x**y = x**y log(x) is taken as 0 at x = 0 (no NaN from log(0)). The
        # output is recomputed, not saved, so `y = x ** 2; y += 1` stays legal, as in PyTorch.
        safe_log = p10.log(p10.where(x == 0, 1.0, x))
        gy = unbroadcast(g * x**y * safe_log, s1)
    return _fit(ctx, (gx, gy))


def _mod(ctx: RuleContext, g: Any) -> Grads:
    (x, y), (n0, n1) = ctx.inputs, ctx.needs_input_grad
    s0, s1 = ctx.input_shapes
    gx = unbroadcast(g, s0) if n0 else None
    gy = unbroadcast(-g * p10.floor(x / y), s1) if n1 else None
    return _fit(ctx, (gx, gy))


def _extremum(ctx: RuleContext, g: Any, wins: Any) -> Grads:
    # NOTE: ties split the gradient evenly between both inputs.
    x, y = ctx.inputs
    s0, s1 = ctx.input_shapes
    share = p10.where(wins, 1.0, p10.where(x == y, 0.5, 0.0))
    share = p10.astype(share, g.dtype, copy=False)
    n0, n1 = ctx.needs_input_grad
    gx = unbroadcast(g * share, s0) if n0 else None
    gy = unbroadcast(g * (1 - share), s1) if n1 else None
    return _fit(ctx, (gx, gy))


def _maximum(ctx: RuleContext, g: Any) -> Grads:
    x, y = ctx.inputs
    return _extremum(ctx, g, x > y)


def _minimum(ctx: RuleContext, g: Any) -> Grads:
    x, y = ctx.inputs
    return _extremum(ctx, g, x < y)


def _where(ctx: RuleContext, g: Any) -> Grads:
    cond = ctx.inputs[0]
    _, s1, s2 = ctx.input_shapes
    _, n1, n2 = ctx.needs_input_grad
    g1 = unbroadcast(p10.where(cond, g, 0.0), s1) if n1 else None
    g2 = unbroadcast(p10.where(cond, 0.0, g), s2) if n2 else None
    return _fit(ctx, (None, g1, g2))


# -- reductions ------------------------------------------------------------------------------------
def _sum(ctx: RuleContext, g: Any) -> Grads:
    return (_broadcast(_keep(g, ctx), ctx.input_shapes[0]),)


def _mean(ctx: RuleContext, g: Any) -> Grads:
    n = max(_reduced_count(ctx), 1)
    return (_broadcast(_keep(g, ctx) / n, ctx.input_shapes[0]),)


def _prod(ctx: RuleContext, g: Any) -> Grads:
    x, axis = ctx.inputs[0], ctx.params.get("axis")
    is_zero = x == 0
    if not p10.any(is_zero).item():
        return (_keep(g, ctx) * _keep(ctx.output, ctx) / x,)
    if _recording(x):
        return (_keep(g, ctx) * _product_of_others(x, axis),)
    zeros = p10.sum(p10.astype(is_zero, "int64"), axis=axis, keepdims=True)
    nonzero_prod = p10.prod(p10.where(is_zero, 1.0, x), axis=axis, keepdims=True)
    # NOTE: with one zero only that element gets a gradient; with more, none does.
    local = p10.where(
        zeros == 0,
        nonzero_prod / p10.where(is_zero, 1.0, x),
        p10.where(p10.logical_and(is_zero, zeros == 1), nonzero_prod, 0.0),
    )
    return (_keep(g, ctx) * local,)


def _recording(x: Any) -> bool:
    """True under ``create_graph``: the rule then sees TPX tensors instead of P10 ones."""
    return x.__class__ is not p10.Tensor


def _product_of_others(x: Any, axis: tuple[int, ...] | None) -> Any:
    """``prod_{j != i} x_j`` over the reduced axes, for every ``i``, without dividing by x.

    NOTE: it forms an ``(n, n)`` matrix per reduced row; used only when x holds zeros under
    ``create_graph``, where it keeps second derivatives exact (the plain formula is O(n)).
    """
    shape = x.shape
    axes = tuple(range(len(shape))) if axis is None else tuple(axis)
    rest = tuple(a for a in range(len(shape)) if a not in axes)
    order = rest + axes
    moved = p10.permute_dims(x, order)
    n = math.prod(shape[a] for a in axes)
    rows = p10.reshape(moved, (*(shape[a] for a in rest), 1, n))
    eye = p10.eye(n, dtype=p10.bool, backend=x.backend)
    others = p10.prod(p10.where(eye, 1.0, rows), axis=-1)
    others = p10.reshape(others, moved.shape)
    inverse = tuple(sorted(range(len(order)), key=lambda k: order[k]))
    return p10.permute_dims(others, inverse)


def _max_min(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: max/min split the gradient evenly between tied elements.
    x = ctx.inputs[0]
    out = _keep(ctx.output, ctx)
    hit = p10.astype(x == out, g.dtype)
    count = p10.sum(hit, axis=ctx.params.get("axis"), keepdims=True)
    return (_keep(g, ctx) * hit / count,)


def _var(ctx: RuleContext, g: Any) -> Grads:
    x, axis = ctx.inputs[0], ctx.params.get("axis")
    n = _reduced_count(ctx) - ctx.params.get("correction", 0.0)
    centered = x - p10.mean(x, axis=axis, keepdims=True)
    # NOTE: no degrees of freedom left (n <= correction): the forward is NaN/inf, so is this.
    return (_keep(g, ctx) * centered * (2.0 / n if n > 0 else math.inf),)


def _logsumexp(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    return (_keep(g, ctx) * p10.exp(x - _keep(ctx.output, ctx)),)


def _cumsum(ctx: RuleContext, g: Any) -> Grads:
    axis = ctx.params["axis"]
    return (p10.flip(p10.cumsum(p10.flip(g, axis=axis), axis=axis), axis=axis),)


# -- linear algebra --------------------------------------------------------------------------------
def _matmul(ctx: RuleContext, g: Any) -> Grads:
    (a, b), (na, nb) = ctx.inputs, ctx.needs_input_grad
    sa, sb = ctx.input_shapes
    if len(sa) >= 2 and len(sb) >= 2:
        # NOTE: the common case (matrices, or stacks of them) calls the ops directly: this
        # rule runs once per linear layer of every backward
        ga = unbroadcast(_mm(g, _mT(b)), sa) if na else None
        gb = unbroadcast(_mm(_mT(a), g), sb) if nb else None
        return _fit(ctx, (ga, gb))
    a2 = p10.reshape(a, (1, sa[0])) if len(sa) == 1 else a
    b2 = p10.reshape(b, (sb[0], 1)) if len(sb) == 1 else b
    g2 = g
    if len(sa) == 1:
        g2 = p10.expand_dims(g2, axis=-2 if len(sb) > 1 else 0)
    if len(sb) == 1:
        g2 = p10.expand_dims(g2, axis=-1)
    ga = gb = None
    if na:
        ga = p10.matmul(g2, p10.matrix_transpose(b2))
        ga = (
            p10.reshape(p10.sum(ga, axis=tuple(range(ga.ndim - 1))), sa)
            if len(sa) == 1
            else (unbroadcast(ga, sa))
        )
    if nb:
        gb = p10.matmul(p10.matrix_transpose(a2), g2)
        gb = unbroadcast(gb, sb if len(sb) > 1 else (sb[0], 1))
        gb = _reshape_to(gb, sb)
    return _fit(ctx, (ga, gb))


def _mm(x: Any, y: Any) -> Any:
    return p10.apply(Op.MATMUL, x, y)


def _mT(x: Any) -> Any:
    n = x.ndim
    return p10.apply(Op.PERMUTE, x, axes=(*range(n - 2), n - 1, n - 2))


def _einsum_grad(terms: list[str], out: str, operands: tuple, shapes: tuple, g: Any, i: int):
    """Gradient of operand ``i`` of ``einsum(",".join(terms) + "->" + out)`` (explicit labels,
    no ``...``): an einsum of the output gradient with the other operands."""
    term, shape = terms[i], shapes[i]
    unique = "".join(dict.fromkeys(term))
    sizes = {c: shape[term.index(c)] for c in unique}
    others = [t for j, t in enumerate(terms) if j != i]
    present = set(out).union(*others)
    target = "".join(c for c in unique if c in present)
    spec = ",".join([out, *others]) + "->" + target
    grad = p10.einsum(spec, g, *[o for j, o in enumerate(operands) if j != i])
    # NOTE: a label of size 1 here may be broadcast against a larger size elsewhere: sum it.
    stretched = tuple(k for k, c in enumerate(target) if sizes[c] == 1 and grad.shape[k] != 1)
    if stretched:
        grad = p10.sum(grad, axis=stretched, keepdims=True)
    if target != unique:  # labels summed inside this operand alone: broadcast back
        kept = tuple(sizes[c] if c in present else 1 for c in unique)
        grad = p10.broadcast_to(p10.reshape(grad, kept), tuple(sizes[c] for c in unique))
    if unique != term:
        grad = _onto_diagonal(grad, term, sizes)
    return grad


def _onto_diagonal(grad: Any, term: str, sizes: dict[str, int]) -> Any:
    """Spread the gradient of the diagonal (one axis per distinct label, in order of first
    appearance) onto an operand whose ``term`` repeats labels (``"ii"``), zero elsewhere."""
    first = {c: term.index(c) for c in sizes}
    grad = p10.reshape(grad, tuple(sizes[c] if first[c] == p else 1 for p, c in enumerate(term)))
    full = tuple(sizes[c] for c in term)
    grad = p10.broadcast_to(grad, full)
    for p, c in enumerate(term):
        if first[c] != p:
            axes_shape = tuple(sizes[c] if k in (first[c], p) else 1 for k in range(len(term)))
            eye = p10.eye(sizes[c], dtype=grad.dtype, backend=grad.backend)
            grad = grad * p10.reshape(eye, axes_shape)
    return grad


def _explicit(subscripts: str, shapes: tuple) -> tuple[list[str], str]:
    """The terms and output of an einsum with ``...`` replaced by letters (right-aligned)."""
    lhs, out = subscripts.split("->")
    terms = lhs.split(",")
    if "..." not in subscripts:
        return terms, out
    used = set(subscripts)
    free = [c for c in string.ascii_letters if c not in used]
    counts = [len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t]
    n = max(counts, default=0)
    if n > len(free):
        raise NotImplementedError(f"einsum gradient: too many '...' axes in {subscripts!r}")
    letters = "".join(free[:n])
    terms = [
        t.replace("...", letters[n - (len(s) - (len(t) - 3)) :]) if "..." in t else t
        for t, s in zip(terms, shapes)
    ]
    return terms, out.replace("...", letters)


def _einsum(ctx: RuleContext, g: Any) -> Grads:
    terms, out = _explicit(ctx.params["subscripts"], ctx.input_shapes)
    grads = tuple(
        _einsum_grad(terms, out, ctx.inputs, ctx.input_shapes, g, i) if need else None
        for i, need in enumerate(ctx.needs_input_grad)
    )
    return _fit(ctx, grads)


def _tensordot(ctx: RuleContext, g: Any) -> Grads:
    (a1, a2), (sa, sb) = ctx.params["axes"], ctx.input_shapes
    letters = iter(string.ascii_letters)
    ta = [next(letters) for _ in sa]
    tb = [next(letters) for _ in sb]
    for i, j in zip(a1, a2):
        tb[j] = ta[i]
    out = "".join(c for k, c in enumerate(ta) if k not in a1)
    out += "".join(c for k, c in enumerate(tb) if k not in a2)
    terms = ["".join(ta), "".join(tb)]
    grads = tuple(
        _einsum_grad(terms, out, ctx.inputs, ctx.input_shapes, g, i) if need else None
        for i, need in enumerate(ctx.needs_input_grad)
    )
    return _fit(ctx, grads)


# -- shape -----------------------------------------------------------------------------------------
def _reshape(ctx: RuleContext, g: Any) -> Grads:
    return (_reshape_to(g, ctx.input_shapes[0]),)


def _permute(ctx: RuleContext, g: Any) -> Grads:
    axes = ctx.params["axes"]
    inverse = tuple(sorted(range(len(axes)), key=lambda k: axes[k]))
    return (p10.permute_dims(g, inverse),)


def _broadcast_to(ctx: RuleContext, g: Any) -> Grads:
    return (unbroadcast(g, ctx.input_shapes[0]),)


def _concat(ctx: RuleContext, g: Any) -> Grads:
    axis = ctx.params["axis"]
    grads, start = [], 0
    for shape, need in zip(ctx.input_shapes, ctx.needs_input_grad):
        stop = start + shape[axis]
        key = (slice(None),) * axis + (slice(start, stop),)
        grads.append(_slice(g, key) if need else None)
        start = stop
    return _fit(ctx, tuple(grads))


def _flip(ctx: RuleContext, g: Any) -> Grads:
    return (p10.flip(g, axis=ctx.params.get("axis")),)


def _tile(ctx: RuleContext, g: Any) -> Grads:
    reps, shape = ctx.params["reps"], ctx.input_shapes[0]
    d = max(len(reps), len(shape))
    reps = (1,) * (d - len(reps)) + tuple(reps)
    padded = (1,) * (d - len(shape)) + tuple(shape)
    split = tuple(v for pair in zip(reps, padded) for v in pair)
    summed = p10.sum(p10.reshape(g, split), axis=tuple(range(0, 2 * d, 2)))
    return (p10.reshape(summed, shape),)


def _repeat(ctx: RuleContext, g: Any) -> Grads:
    repeats, axis, shape = ctx.params["repeats"], ctx.params.get("axis"), ctx.input_shapes[0]
    if axis is None:
        return (p10.reshape(p10.sum(p10.reshape(g, (-1, repeats)), axis=1), shape),)
    split = shape[:axis] + (shape[axis], repeats) + shape[axis + 1 :]
    return (p10.sum(p10.reshape(g, split), axis=axis + 1),)


def _pad(ctx: RuleContext, g: Any) -> Grads:
    shape = ctx.input_shapes[0]
    key = tuple(slice(a, a + s) for (a, _), s in zip(ctx.params["pad_width"], shape))
    return (_slice(g, key),)


def _roll(ctx: RuleContext, g: Any) -> Grads:
    shifts = tuple(-s for s in ctx.params["shifts"])
    return (p10.apply(Op.ROLL, g, shifts=shifts, axes=ctx.params["axes"]),)


def _tril(ctx: RuleContext, g: Any) -> Grads:
    return (p10.apply(Op.TRIL, g, k=ctx.params.get("k", 0)),)


def _triu(ctx: RuleContext, g: Any) -> Grads:
    return (p10.apply(Op.TRIU, g, k=ctx.params.get("k", 0)),)


# -- indexing --------------------------------------------------------------------------------------
def _getitem(ctx: RuleContext, g: Any) -> Grads:
    index = ctx.inputs[1:]
    zeros = _zeros(ctx, 0, g)
    grad = p10.apply(Op.INDEX_ADD, zeros, g, *index, key=ctx.params["key"])
    return (grad, *(None,) * len(index))


def _gather(ctx: RuleContext, g: Any, values_shape: tuple) -> Any:
    picked = p10.apply(Op.GETITEM, g, *ctx.inputs[2:], key=ctx.params["key"])
    return unbroadcast(picked, values_shape)


def _index_add(ctx: RuleContext, g: Any) -> Grads:
    n_index = len(ctx.input_shapes) - 2
    gv = _gather(ctx, g, ctx.input_shapes[1]) if ctx.needs_input_grad[1] else None
    return _fit(ctx, (g, gv, *(None,) * n_index))


def _index_put(ctx: RuleContext, g: Any) -> Grads:
    n_index = len(ctx.input_shapes) - 2
    key, index = ctx.params["key"], ctx.inputs[2:]
    gb = gv = None
    if ctx.needs_input_grad[0]:
        zero = p10.zeros((), dtype=g.dtype, backend=g.backend)
        gb = p10.apply(Op.INDEX_PUT, g, zero, *index, key=key)
    if ctx.needs_input_grad[1]:
        picked = p10.apply(Op.GETITEM, g, *index, key=key)
        if index:
            # NOTE: with repeated indices only the write that lands (the last) gets a gradient.
            picked = p10.where(_landed(ctx, picked.shape), picked, 0.0)
        gv = unbroadcast(picked, ctx.input_shapes[1])
    return _fit(ctx, (gb, gv, *(None,) * n_index))


def _landed(ctx: RuleContext, shape: tuple[int, ...]) -> Any:
    """Where each written element of ``base[key] = values`` is the one that stays."""
    key, index, backend = ctx.params["key"], ctx.inputs[2:], ctx.inputs[2].backend
    ids = p10.reshape(p10.arange(math.prod(shape), dtype=p10.int64, backend=backend), shape)
    slots = p10.full(ctx.input_shapes[0], -1, dtype=p10.int64, backend=backend)
    slots = p10.apply(Op.INDEX_PUT, slots, ids, *index, key=key)
    return p10.apply(Op.GETITEM, slots, *index, key=key) == ids


# -- neural-network kernels ------------------------------------------------------------------------
def _softmax(ctx: RuleContext, g: Any) -> Grads:
    out, axis = ctx.output, ctx.params["axis"]
    return (out * (g - (g * out).sum(axis=axis, keepdims=True)),)


def _log_softmax(ctx: RuleContext, g: Any) -> Grads:
    out, axis = ctx.output, ctx.params["axis"]
    # NOTE: methods, not p10.exp/p10.sum: the tensors' shortcuts skip the argument checks
    return (g - out.exp() * g.sum(axis=axis, keepdims=True),)


def _conv2d(ctx: RuleContext, g: Any) -> Grads:
    (x, w), (nx, nw) = ctx.inputs, ctx.needs_input_grad
    p = ctx.params
    (n, c, h, wd), (o, cg, kh, kw) = ctx.input_shapes
    groups, length = p["groups"], g.shape[2] * g.shape[3]
    geom = {"stride": p["stride"], "padding": p["padding"], "dilation": p["dilation"]}
    g_flat = p10.reshape(g, (n, groups, o // groups, length))
    w_g = p10.reshape(w, (groups, o // groups, cg * kh * kw))
    gx = gw = None
    if nx:
        cols = p10.reshape(p10.matmul(p10.matrix_transpose(w_g), g_flat), (n, c * kh * kw, length))
        gx = p10.apply(Op.FOLD, cols, output_size=(h, wd), kernel_size=(kh, kw), **geom)
    if nw:
        cols = p10.apply(Op.UNFOLD, x, kernel_size=(kh, kw), **geom)
        cols = p10.reshape(cols, (n, groups, cg * kh * kw, length))
        gw = p10.sum(p10.matmul(g_flat, p10.matrix_transpose(cols)), axis=0)
        gw = p10.reshape(gw, (o, cg, kh, kw))
    return _fit(ctx, (gx, gw))


def _unfold(ctx: RuleContext, g: Any) -> Grads:
    size = ctx.input_shapes[0][2:]
    return (p10.apply(Op.FOLD, g, output_size=size, **ctx.params),)


def _fold(ctx: RuleContext, g: Any) -> Grads:
    params = {k: v for k, v in ctx.params.items() if k != "output_size"}
    return (p10.apply(Op.UNFOLD, g, **params),)


def _pool_cols(ctx: RuleContext, x: Any, fill: float) -> tuple[Any, dict]:
    p = ctx.params
    (ph, pw), k = p["padding"], p["kernel_size"]
    if ph or pw:
        x = p10.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), value=fill)
    geom = {"kernel_size": k, "stride": p["stride"], "padding": (0, 0), "dilation": (1, 1)}
    return x, geom


def _crop(ctx: RuleContext, grad: Any) -> Any:
    (ph, pw), (h, w) = ctx.params["padding"], ctx.input_shapes[0][2:]
    if not (ph or pw):
        return grad
    return grad[:, :, ph : ph + h, pw : pw + w]


def _max_pool2d(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: ties inside a window split the gradient evenly (PyTorch picks one element).
    xp, geom = _pool_cols(ctx, ctx.inputs[0], -math.inf)
    n, c = ctx.input_shapes[0][:2]
    kk, length = geom["kernel_size"][0] * geom["kernel_size"][1], g.shape[2] * g.shape[3]
    cols = p10.reshape(p10.apply(Op.UNFOLD, xp, **geom), (n, c, kk, length))
    hit = p10.astype(cols == p10.reshape(ctx.output, (n, c, 1, length)), g.dtype)
    share = hit / p10.sum(hit, axis=2, keepdims=True)
    gcols = p10.reshape(share * p10.reshape(g, (n, c, 1, length)), (n, c * kk, length))
    grad = p10.apply(Op.FOLD, gcols, output_size=xp.shape[2:], **geom)
    return (_crop(ctx, grad),)


def _avg_pool2d(ctx: RuleContext, g: Any) -> Grads:
    p, (n, c, h, w) = ctx.params, ctx.input_shapes[0]
    k = p["kernel_size"]
    kk, length = k[0] * k[1], g.shape[2] * g.shape[3]
    gcols = p10.broadcast_to(p10.reshape(g, (n, c, 1, length)) / kk, (n, c, kk, length))
    geom = {"kernel_size": k, "stride": p["stride"], "padding": p["padding"], "dilation": (1, 1)}
    grad = p10.apply(Op.FOLD, p10.reshape(gcols, (n, c * kk, length)), output_size=(h, w), **geom)
    return (grad,)


# -- Array API elementwise functions (issue 18) ---------------------------------------------------
def _acos(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    return (-g / p10.sqrt(1 - x * x),)


def _acosh(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    return (g / p10.sqrt(x * x - 1),)


def _asin(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    return (g / p10.sqrt(1 - x * x),)


def _asinh(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    return (g / p10.sqrt(x * x + 1),)


def _atan(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    return (g / (x * x + 1),)


def _atanh(ctx: RuleContext, g: Any) -> Grads:
    x = ctx.inputs[0]
    return (g / (1 - x * x),)


def _cosh(ctx: RuleContext, g: Any) -> Grads:
    return (g * p10.sinh(ctx.inputs[0]),)


def _sinh(ctx: RuleContext, g: Any) -> Grads:
    return (g * p10.cosh(ctx.inputs[0]),)


def _log2(ctx: RuleContext, g: Any) -> Grads:
    return (g / (ctx.inputs[0] * math.log(2.0)),)


def _log10(ctx: RuleContext, g: Any) -> Grads:
    return (g / (ctx.inputs[0] * math.log(10.0)),)


def _atan2(ctx: RuleContext, g: Any) -> Grads:
    (y, x), (n0, n1) = ctx.inputs, ctx.needs_input_grad
    s0, s1 = ctx.input_shapes
    scale = g / (x * x + y * y)
    gy = unbroadcast(scale * x, s0) if n0 else None
    gx = unbroadcast(-scale * y, s1) if n1 else None
    return _fit(ctx, (gy, gx))


def _logaddexp(ctx: RuleContext, g: Any) -> Grads:
    (a, b), (n0, n1), out = ctx.inputs, ctx.needs_input_grad, ctx.output
    s0, s1 = ctx.input_shapes
    ga = unbroadcast(g * p10.exp(a - out), s0) if n0 else None
    gb = unbroadcast(g * p10.exp(b - out), s1) if n1 else None
    return _fit(ctx, (ga, gb))


def _hypot(ctx: RuleContext, g: Any) -> Grads:
    (x, y), (n0, n1), out = ctx.inputs, ctx.needs_input_grad, ctx.output
    s0, s1 = ctx.input_shapes
    scale = g / out
    gx = unbroadcast(scale * x, s0) if n0 else None
    gy = unbroadcast(scale * y, s1) if n1 else None
    return _fit(ctx, (gx, gy))


def _copysign(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: d/dx is +-1 (-1 where the signs differ); x2 only picks a sign: zero gradient.
    x, y = ctx.inputs
    flip = p10.logical_xor(p10.signbit(x), p10.signbit(y))
    gx = unbroadcast(p10.where(flip, -g, g), ctx.input_shapes[0])
    return _fit(ctx, (gx, _zeros(ctx, 1, g)))


def _nextafter(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: the result moves with x1 (one ulp away): gradient 1 to x1, 0 to x2. PyTorch has none.
    gx = unbroadcast(g, ctx.input_shapes[0])
    return _fit(ctx, (gx, _zeros(ctx, 1, g)))


# -- the table ------------------------------------------------------------------------------------
_X, _Y, _XY = (0,), (1,), (0, 1)

RULES: dict[Any, Rule] = {
    Op.NEG: Rule(_neg),
    Op.ABS: Rule(_abs, _X),
    Op.EXP: Rule(_exp, save_output=True),
    Op.LOG: Rule(_log, _X),
    Op.LOG1P: Rule(_log1p, _X),
    Op.EXPM1: Rule(_expm1, save_output=True),
    Op.SQRT: Rule(_sqrt, save_output=True),
    Op.SQUARE: Rule(_square, _X),
    Op.RECIPROCAL: Rule(_reciprocal, save_output=True),
    Op.SIN: Rule(_sin, _X),
    Op.COS: Rule(_cos, _X),
    Op.TAN: Rule(_tan, save_output=True),
    Op.TANH: Rule(_tanh, save_output=True),
    Op.SIGMOID: Rule(_sigmoid, save_output=True),
    Op.RELU: Rule(_relu, save_output=True),
    Op.GELU: Rule(_gelu, _X),
    Op.ERF: Rule(_erf, _X),
    Op.SIGN: Rule(_zero_grad, _X),  # x: complex sign (tpx._complex_rules)
    Op.FLOOR: Rule(_zero_grad),
    Op.CEIL: Rule(_zero_grad),
    Op.ROUND: Rule(_zero_grad),
    Op.CLIP: Rule(_clip, _X),
    Op.CAST: Rule(_cast),
    Op.COPY: Rule(_copy),
    Op.ADD: Rule(_add),
    Op.SUB: Rule(_sub),
    Op.MUL: Rule(_mul, _XY, cross=True),
    Op.DIV: Rule(_div, _XY),
    Op.FLOORDIV: Rule(_zero_grad),
    Op.MOD: Rule(_mod, _XY),
    Op.POW: Rule(_pow, _XY),
    Op.MAXIMUM: Rule(_maximum, _XY),
    Op.MINIMUM: Rule(_minimum, _XY),
    Op.WHERE: Rule(_where, (0,)),
    Op.SUM: Rule(_sum),
    Op.MEAN: Rule(_mean),
    Op.PROD: Rule(_prod, _X, save_output=True),
    Op.MAX: Rule(_max_min, _X, save_output=True),
    Op.MIN: Rule(_max_min, _X, save_output=True),
    Op.VAR: Rule(_var, _X),
    Op.LOGSUMEXP: Rule(_logsumexp, _X, save_output=True),
    Op.CUMSUM: Rule(_cumsum),
    Op.MATMUL: Rule(_matmul, _XY),
    Op.TENSORDOT: Rule(_tensordot, _XY),
    Op.EINSUM: Rule(_einsum, save_from=0),
    Op.RESHAPE: Rule(_reshape),
    Op.PERMUTE: Rule(_permute),
    Op.BROADCAST_TO: Rule(_broadcast_to),
    Op.CONCAT: Rule(_concat),
    Op.FLIP: Rule(_flip),
    Op.TILE: Rule(_tile),
    Op.REPEAT: Rule(_repeat),
    Op.PAD: Rule(_pad),
    Op.ROLL: Rule(_roll),
    Op.TRIL: Rule(_tril),
    Op.TRIU: Rule(_triu),
    Op.GETITEM: Rule(_getitem, save_from=1),
    Op.INDEX_ADD: Rule(_index_add, save_from=2),
    Op.INDEX_PUT: Rule(_index_put, save_from=2),
    Op.SOFTMAX: Rule(_softmax, save_output=True),
    Op.LOG_SOFTMAX: Rule(_log_softmax, save_output=True),
    Op.CONV2D: Rule(_conv2d, _XY),
    Op.UNFOLD: Rule(_unfold),
    Op.FOLD: Rule(_fold),
    Op.MAX_POOL2D: Rule(_max_pool2d, _X, save_output=True),
    Op.AVG_POOL2D: Rule(_avg_pool2d),
    **LINALG_RULES,
    **FFT_RULES,
    Op.ACOS: Rule(_acos, _X),
    Op.ACOSH: Rule(_acosh, _X),
    Op.ASIN: Rule(_asin, _X),
    Op.ASINH: Rule(_asinh, _X),
    Op.ATAN: Rule(_atan, _X),
    Op.ATANH: Rule(_atanh, _X),
    Op.COSH: Rule(_cosh, _X),
    Op.SINH: Rule(_sinh, _X),
    Op.LOG2: Rule(_log2, _X),
    Op.LOG10: Rule(_log10, _X),
    Op.TRUNC: Rule(_zero_grad),
    Op.ATAN2: Rule(_atan2, _XY),
    Op.LOGADDEXP: Rule(_logaddexp, _XY, save_output=True),
    Op.HYPOT: Rule(_hypot, _XY, save_output=True),
    Op.COPYSIGN: Rule(_copysign, _XY),
    Op.NEXTAFTER: Rule(_nextafter),
    **COMPLEX_RULES,
}
"""The gradient rule of every differentiable op."""
conjugate_rules(RULES)  # complex inputs: PyTorch's convention (see tpx._complex_rules)


# -- pickled by reference -------------------------------------------------------------------------
# A rule sent to another process (a Dask worker of the cluster check) must arrive as the table's
# own object, not a copy by value: the checks treat TPX's rules by identity. The bare rules are
# module-level functions already; the complex-convention wrappers get a module-level name here,
# and a Rule of the table pickles as a lookup of its op.
class complex_vjps:
    """``RULES[op].vjp`` by op name, for each rule whose vjp wraps its ``real_vjp`` (the name
    pickle finds it by: ``tpx.rules.complex_vjps.MUL``). A class, not an instance, so that it
    pickles by reference itself (pickle protocols < 4 reach the attribute through it).

    >>> complex_vjps.MUL is RULES[Op.MUL].vjp
    True
    """


_BUILTIN: dict[Any, Rule] = {}
_OP_OF: dict[int, Any] = {}  # id of a rule of _BUILTIN (which keeps it alive) -> its op


def builtin_rule(op: Op) -> Rule:
    """TPX's own rule of ``op``, as the table held it when tpx was imported: what a pickled rule
    of the table loads as, identical in every process.

    >>> import pickle
    >>> r = RULES[Op.MUL]
    >>> pickle.loads(pickle.dumps(r)) is r is builtin_rule(Op.MUL)
    True
    >>> pickle.loads(pickle.dumps(r.vjp)) is r.vjp, r.vjp.__qualname__
    (True, 'complex_vjps.MUL')
    """
    return _BUILTIN[op]


def _reduce_rule(rule: Rule) -> tuple:
    op = _OP_OF.get(id(rule))
    if op is not None:
        return builtin_rule, (op,)
    # NOTE: any other rule (a user's, an override) pickles by value, its vjp by reference
    return Rule, (rule.vjp, rule.save, rule.save_output, rule.cross, rule.save_from)


def _name_for_pickle(rules: dict[Any, Rule]) -> None:
    for op, rule in rules.items():
        if rule.vjp is not rule.real_vjp:
            setattr(complex_vjps, op.name, rule.vjp)
            rule.vjp.__module__, rule.vjp.__qualname__ = __name__, f"complex_vjps.{op.name}"
    _BUILTIN.update(rules)
    _OP_OF.update({id(rule): op for op, rule in rules.items()})
    copyreg.pickle(Rule, _reduce_rule)


_name_for_pickle(RULES)

NON_DIFFERENTIABLE: frozenset[Any] = frozenset(
    {
        Op.LOGICAL_NOT, Op.BITWISE_INVERT, Op.ISNAN, Op.ISINF, Op.ISFINITE, Op.EQ, Op.NE, Op.LT,
        Op.LE, Op.GT, Op.GE, Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_XOR, Op.BITWISE_AND,
        Op.BITWISE_OR, Op.BITWISE_XOR, Op.ARGMAX, Op.ARGMIN, Op.ALL, Op.ANY, Op.TOPK, Op.SIGNBIT,
        Op.BITWISE_LEFT_SHIFT, Op.BITWISE_RIGHT_SHIFT,
    }
)  # fmt: skip
"""Ops whose outputs never require grad (comparisons, logic, indices)."""
