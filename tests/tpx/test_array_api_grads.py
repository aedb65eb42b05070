"""Gradients through the Array API compositions of issue 18 (sort, cumulative_prod, unique_*,
searchsorted), checked against central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

import p10
import tpx as tp
from tests.helpers.fd import check_vjp

RNG = np.random.default_rng(18)


def test_sort_gradient_goes_to_the_sorted_elements() -> None:
    x = RNG.permutation(12).reshape(3, 4) + RNG.uniform(0.1, 0.4, (3, 4))
    check_vjp(lambda t: p10.sort(t, axis=1) * p10.arange(4.0, dtype="float64"), [x])
    check_vjp(lambda t: p10.sort(t, axis=0, descending=True), [x])


def test_cumulative_prod_gradient_with_and_without_zeros() -> None:
    x = RNG.uniform(-2.0, 2.0, (2, 4))
    check_vjp(lambda t: p10.cumulative_prod(t, axis=1), [x])
    check_vjp(lambda t: p10.cumulative_prod(t, axis=0, include_initial=True), [x])
    x[0, 1] = 0.0
    check_vjp(lambda t: p10.cumulative_prod(t, axis=1), [x])


def test_unique_values_gradient_goes_to_the_first_occurrence() -> None:
    x = tp.asarray(np.array([2.0, 1.0, 2.0, 3.0]), requires_grad=True)
    (g,) = tp.grad((p10.unique_values(x) * tp.asarray([1.0, 10.0, 100.0])).sum(), [x])
    assert g.tolist() == [10.0, 1.0, 0.0, 100.0]


def test_searchsorted_and_argsort_are_not_differentiable() -> None:
    x = tp.asarray(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    assert not p10.searchsorted(x, x).requires_grad
    assert not p10.argsort(x).requires_grad


# -- against PyTorch (when installed): complex convention and linalg rules ---------------------
def _both(fn, arrays):
    """Gradients of ``fn`` at ``arrays`` from torch.autograd and from tpx."""
    torch = pytest.importorskip("torch")
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    expected = torch.autograd.grad(fn(tt, torch), tt, allow_unused=True)
    xs = [tp.asarray(a, requires_grad=True) for a in arrays]
    got = tp.grad(fn(xs, p10), xs, allow_unused=True)
    for i, (e, g) in enumerate(zip(expected, got)):
        e = np.zeros_like(arrays[i]) if e is None else e.detach().numpy()
        g = np.zeros_like(arrays[i]) if g is None else g.numpy()
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-10, err_msg=f"input {i}")


def _sum(xp, x):
    return xp.sum(x) if xp is not p10 else p10.sum(x)


_Z = RNG.normal(size=3) + 1j * RNG.normal(size=3)
_W = RNG.normal(size=3) + 1j * RNG.normal(size=3)
_M = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))
_R = RNG.normal(size=3)
COMPLEX_LOSSES = {
    "mul-abs": lambda v, xp: _sum(xp, xp.abs(v[0] * v[1])),
    "exp-div-real": lambda v, xp: _sum(xp, xp.real(xp.exp(v[0]) / v[1])),
    "log-sqrt-imag": lambda v, xp: _sum(xp, xp.imag(xp.log(v[0]) * xp.sqrt(v[1]))),
    "conj-square": lambda v, xp: _sum(xp, xp.real(xp.conj(v[0]) * v[0] * v[1])),
    "sin-tanh-sub": lambda v, xp: _sum(xp, xp.abs(xp.sin(v[0]) - xp.tanh(v[1]))),
    "matmul": lambda v, xp: _sum(xp, xp.abs(xp.matmul(v[2], v[0]))),
    "real-times-complex": lambda v, xp: _sum(xp, xp.abs(v[0] * v[3] + v[3])),
    "inv-det": lambda v, xp: xp.abs(xp.linalg.det(v[2])) + _sum(xp, xp.real(xp.linalg.inv(v[2]))),
    "solve": lambda v, xp: _sum(xp, xp.abs(xp.linalg.solve(v[2], v[1]))),
    "slogdet": lambda v, xp: xp.linalg.slogdet(v[2])[1] + xp.abs(xp.linalg.slogdet(v[2])[0] - 1),
    "fft": lambda v, xp: _sum(xp, xp.abs(xp.fft.fft(v[0]) * v[1])),
    "rfft-irfft": lambda v, xp: _sum(xp, xp.fft.irfft(v[1], n=5) * xp.abs(xp.fft.rfft(v[3]))[0]),
}


@pytest.mark.parametrize("name", list(COMPLEX_LOSSES))
def test_complex_gradients_match_torch(name: str) -> None:
    _both(COMPLEX_LOSSES[name], [_Z, _W, _M, _R])


_A = RNG.normal(size=(2, 3, 3))
_T = RNG.normal(size=(4, 3))
_C = np.array([1.0, 2.0, 3.0])


def _spd(xp, a):
    return xp.matmul(a, xp.swapaxes(a, -1, -2) if xp is not p10 else p10.matrix_transpose(a)) + (
        3.0 * (xp.eye(3, dtype=xp.float64))
    )


def _t(xp, a):
    return a.mT if xp is not p10 else p10.matrix_transpose(a)


def _c(xp):
    return xp.asarray(_C) if xp is not p10 else p10.asarray(_C)


LINALG_LOSSES = {
    "inv": lambda v, xp: _sum(xp, xp.linalg.inv(v[0]) * v[0]),
    "solve": lambda v, xp: _sum(xp, xp.linalg.solve(v[0], v[0][..., :2])),
    "det": lambda v, xp: _sum(xp, xp.linalg.det(v[0])),
    "slogdet": lambda v, xp: _sum(xp, xp.linalg.slogdet(v[0])[1]),
    "cholesky": lambda v, xp: _sum(xp, xp.linalg.cholesky(_spd(xp, v[0])) * v[0]),
    "qr": lambda v, xp: (
        _sum(xp, xp.abs(xp.linalg.qr(v[1])[1])) + _sum(xp, xp.linalg.qr(v[1])[0] ** 2 * v[1])
    ),
    "eigh": lambda v, xp: (
        _sum(xp, xp.linalg.eigh(_spd(xp, v[0]))[0] * _c(xp))
        + _sum(xp, (lambda q: xp.matmul(q * _c(xp), _t(xp, q)))(xp.linalg.eigh(_spd(xp, v[0]))[1]))
    ),
    "svd": lambda v, xp: (
        _sum(xp, xp.linalg.svd(v[1], full_matrices=False)[1] * _c(xp))
        + _sum(
            xp,
            (lambda u: xp.matmul(u * _c(xp), _t(xp, u)))(
                xp.linalg.svd(v[1], full_matrices=False)[0]
            ),
        )
    ),
}


@pytest.mark.parametrize("name", list(LINALG_LOSSES))
def test_linalg_gradients_match_torch(name: str) -> None:
    _both(LINALG_LOSSES[name], [_A, _T])


def _mh(xp, a):
    return xp.conj(_t(xp, a))


def _hpd(xp, a):
    eye = xp.eye(3, dtype=xp.complex128)
    return xp.matmul(a, _mh(xp, a)) + 3.0 * eye


def _cgram(xp, f):
    """``F diag(c) F^H``: free of the phases of the factor's columns."""
    return xp.matmul(f * _c(xp), _mh(xp, f))


def _sgn(xp, z):
    return xp.sgn(z) if xp is not p10 else p10.sign(z)


_ZT = RNG.normal(size=(4, 3)) + 1j * RNG.normal(size=(4, 3))
COMPLEX_LINALG_LOSSES = {
    "sign": lambda v, xp: _sum(xp, xp.real(_sgn(xp, v[0]) * v[1])),
    "cholesky": lambda v, xp: _sum(xp, xp.abs(xp.linalg.cholesky(_hpd(xp, v[2])) * v[2])),
    "cholesky-upper": lambda v, xp: _sum(
        xp, xp.real(xp.linalg.cholesky(_hpd(xp, v[2]), upper=True) * v[2])
    ),
    "qr-tall": lambda v, xp: (
        _sum(xp, xp.real(xp.linalg.qr(v[3])[0] * v[3]))
        + _sum(xp, xp.imag(xp.linalg.qr(v[3])[1] ** 2))
    ),
    "qr-wide": lambda v, xp: (
        _sum(xp, xp.real(xp.linalg.qr(_t(xp, v[3]))[1] * _t(xp, v[3])))
        + _sum(xp, xp.abs(xp.linalg.qr(_t(xp, v[3]))[0] - 1))
    ),
    "eigh": lambda v, xp: (
        _sum(xp, xp.linalg.eigh(_hpd(xp, v[2]))[0] * _c(xp))
        + _sum(xp, xp.abs(_cgram(xp, xp.linalg.eigh(_hpd(xp, v[2]))[1])))
    ),
    "svd": lambda v, xp: (
        _sum(xp, xp.linalg.svd(v[3], full_matrices=False)[1] * _c(xp))
        + _sum(xp, xp.real(_cgram(xp, xp.linalg.svd(v[3], full_matrices=False)[0]) * 1j))
        + _sum(xp, xp.abs(_cgram(xp, _mh(xp, xp.linalg.svd(v[3], full_matrices=False)[2]))))
    ),
    "pinv": lambda v, xp: _sum(xp, xp.abs(xp.linalg.pinv(v[3]))),
}


@pytest.mark.parametrize("name", list(COMPLEX_LINALG_LOSSES))
def test_complex_linalg_gradients_match_torch(name: str) -> None:
    _both(COMPLEX_LINALG_LOSSES[name], [_Z, _W, _M, _ZT])


def test_real_qr_of_a_wide_matrix_matches_torch() -> None:
    _both(lambda v, xp: _sum(xp, xp.linalg.qr(v[0])[0] * v[0][:, :3])
          + _sum(xp, xp.linalg.qr(v[0])[1] ** 2), [_T.T.copy()])  # fmt: skip


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix() -> None:
    # NOTE: rows 0 and 1 are parallel (rank 2): the cofactors are not all zero
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    x = tp.asarray(a, requires_grad=True)
    (g,) = tp.grad(p10.linalg.det(x), [x])
    cof = np.array([[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(g.numpy(), cof, atol=1e-12)
    z = tp.asarray(a * (1 + 2j), requires_grad=True)  # det(c A) = c^3 det(A): cofactors c^2
    (gz,) = tp.grad(p10.real(p10.linalg.det(z)), [z])
    np.testing.assert_allclose(gz.numpy(), np.conj((1 + 2j) ** 2) * cof, atol=1e-12)


def test_linalg_rules_refuse_what_has_no_gradient_by_name() -> None:
    z = tp.asarray(_ZT, requires_grad=True)
    with pytest.raises(tp.RuleError, match="svd: the gradient of U or Vh of a 4x3 matrix"):
        tp.grad(p10.sum(p10.abs(p10.linalg.svd(z).U)), [z])
    with pytest.raises(tp.RuleError, match="qr: the gradient of mode='complete' needs M <= N"):
        tp.grad(p10.sum(p10.abs(p10.linalg.qr(z, mode="complete").Q)), [z])
    x = tp.asarray(np.ones((2, 3, 3)), requires_grad=True)
    with pytest.raises(tp.RuleError, match="slogdet: the gradient of logabsdet at a singular"):
        tp.grad(p10.sum(p10.linalg.slogdet(x).logabsdet), [x])


# -- tp.register_rule and complex numbers ---------------------------------------------------------
_SQUARE = p10.define_op("square_i18_test", lambda x: x * x)


def _square_real_formula(ctx, g):
    return (g * 2 * ctx.inputs[0],)


def _square_own(ctx, g):
    return (g * 2 * p10.conj(ctx.inputs[0]),)


def _grad_of_square(z: np.ndarray) -> np.ndarray:
    t = tp.asarray(z, requires_grad=True)
    (g,) = tp.grad(p10.sum(p10.abs(p10.apply(_SQUARE, t))), [t])
    return g.numpy()


@pytest.mark.parametrize(
    "mode, rule", [("holomorphic", _square_real_formula), ("own", _square_own)]
)
def test_registered_rule_follows_the_complex_convention(mode: str, rule) -> None:
    with tp.register_rule(_SQUARE, rule, save=(0,), complex_mode=mode):
        got = _grad_of_square(_Z)
        real = _grad_of_square(_R)
    torch = pytest.importorskip("torch")
    t = torch.tensor(_Z, requires_grad=True)
    torch.abs(t * t).sum().backward()
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(real, 2 * _R, rtol=1e-12)


def test_registered_real_rule_refuses_complex_values_by_name() -> None:
    with tp.register_rule(_SQUARE, _square_real_formula, save=(0,)):
        with pytest.raises(tp.RuleError, match="square_i18_test: the registered rule is for real"):
            _grad_of_square(_Z)
        np.testing.assert_allclose(_grad_of_square(_R), 2 * _R, rtol=1e-12)
    with pytest.raises(tp.DefinitionError, match="complex_mode must be one of"):
        tp.register_rule(_SQUARE, _square_real_formula, complex_mode="wirtinger")


class _SquareFunction(tp.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * p10.conj(x)


def test_function_backward_follows_the_complex_convention_itself() -> None:
    torch = pytest.importorskip("torch")
    z = tp.asarray(_Z, requires_grad=True)
    p10.sum(p10.real(_SquareFunction.apply(z) * tp.asarray(_W))).backward()
    t = torch.tensor(_Z, requires_grad=True)
    (t * t * torch.tensor(_W)).real.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_real_nodes_of_sign_and_of_registered_rules_run_the_bare_rule() -> None:
    from tpx.rules import RULES

    x = tp.asarray(_R, requires_grad=True)
    z = tp.asarray(_Z, requires_grad=True)
    sign = RULES[p10.Op.SIGN]
    assert p10.sign(x).grad_fn.vjp is sign.real_vjp is not sign.vjp
    assert p10.sign(z).grad_fn.vjp is sign.vjp
    with tp.register_rule(_SQUARE, _square_real_formula, save=(0,)):
        assert p10.apply(_SQUARE, x).grad_fn.vjp is _square_real_formula
        assert p10.apply(_SQUARE, z).grad_fn.vjp is not _square_real_formula
