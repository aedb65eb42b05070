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


def test_non_holomorphic_rules_refuse_complex_inputs_by_name() -> None:
    z = tp.asarray(_M, requires_grad=True)
    with pytest.raises(tp.RuleError, match="svd: the gradient of a complex input"):
        tp.grad(p10.sum(p10.abs(p10.linalg.svdvals(z))), [z])
    x = tp.asarray(_T, requires_grad=True)
    with pytest.raises(tp.RuleError, match="qr: the gradient needs M >= N"):
        tp.grad(p10.sum(p10.linalg.qr(p10.matrix_transpose(x)).R), [x])
