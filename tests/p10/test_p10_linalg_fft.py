"""p10.linalg, p10.fft and complex dtypes (issue 18): values against NumPy, shapes, errors."""

from __future__ import annotations

import numpy as np
import pytest

import p10

RNG = np.random.default_rng(18)
A = RNG.normal(size=(2, 3, 3))
SPD = A @ np.swapaxes(A, -1, -2) + 3 * np.eye(3)
T = RNG.normal(size=(4, 3))
Z = RNG.normal(size=(2, 4)) + 1j * RNG.normal(size=(2, 4))


def _np(x: object) -> np.ndarray:
    return np.asarray(x)


@pytest.mark.parametrize(
    ("name", "ours", "ref"),
    [
        ("inv", lambda a: p10.linalg.inv(a), np.linalg.inv),
        ("det", lambda a: p10.linalg.det(a), np.linalg.det),
        ("logabsdet", lambda a: p10.linalg.slogdet(a).logabsdet, lambda a: np.linalg.slogdet(a)[1]),
        ("sign", lambda a: p10.linalg.slogdet(a).sign, lambda a: np.linalg.slogdet(a)[0]),
        ("cholesky", lambda a: p10.linalg.cholesky(a), np.linalg.cholesky),
        ("cholesky-upper", lambda a: p10.linalg.cholesky(a, upper=True),
         lambda a: np.linalg.cholesky(a, upper=True)),
        ("eigvalsh", lambda a: p10.linalg.eigvalsh(a), np.linalg.eigvalsh),
        ("svdvals", lambda a: p10.linalg.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False)),
        ("pinv", lambda a: p10.linalg.pinv(a), np.linalg.pinv),
        ("matrix_rank", lambda a: p10.linalg.matrix_rank(a), np.linalg.matrix_rank),
        ("trace", lambda a: p10.linalg.trace(a, offset=1), lambda a: np.trace(a, 1, -2, -1)),
        ("diagonal", lambda a: p10.linalg.diagonal(a, offset=-1),
         lambda a: np.diagonal(a, -1, -2, -1)),
        ("matrix_power", lambda a: p10.linalg.matrix_power(a, 3),
         lambda a: np.linalg.matrix_power(a, 3)),
        ("matrix_power-neg", lambda a: p10.linalg.matrix_power(a, -2),
         lambda a: np.linalg.matrix_power(a, -2)),
        ("fro", lambda a: p10.linalg.matrix_norm(a), lambda a: np.linalg.norm(a, axis=(-2, -1))),
        ("nuc", lambda a: p10.linalg.matrix_norm(a, ord="nuc"),
         lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1))),
        ("ord-inf", lambda a: p10.linalg.matrix_norm(a, ord=np.inf),
         lambda a: np.linalg.norm(a, np.inf, axis=(-2, -1))),
        ("ord--2", lambda a: p10.linalg.matrix_norm(a, ord=-2),
         lambda a: np.linalg.norm(a, -2, axis=(-2, -1))),
    ],
)  # fmt: skip
def test_linalg_matches_numpy(name: str, ours: object, ref: object) -> None:
    np.testing.assert_allclose(_np(ours(p10.asarray(SPD))), ref(SPD), rtol=1e-10, atol=1e-10)


def test_decompositions_reconstruct_their_input() -> None:
    q, r = p10.linalg.qr(p10.asarray(T))
    np.testing.assert_allclose(_np(q) @ _np(r), T, atol=1e-12)
    u, s, vh = p10.linalg.svd(p10.asarray(T), full_matrices=False)
    np.testing.assert_allclose((_np(u) * _np(s)) @ _np(vh), T, atol=1e-12)
    assert p10.linalg.svd(p10.asarray(T)).U.shape == (4, 4)
    w, v = p10.linalg.eigh(p10.asarray(SPD))
    np.testing.assert_allclose(_np(v) @ (_np(w)[..., None] * np.swapaxes(_np(v), -1, -2)), SPD)


def test_solve_vector_matrix_and_batch_broadcast() -> None:
    b = RNG.normal(size=3)
    np.testing.assert_allclose(_np(p10.linalg.solve(p10.asarray(SPD[0]), p10.asarray(b))),
                               np.linalg.solve(SPD[0], b))  # fmt: skip
    bb = RNG.normal(size=(3, 2))
    out = p10.linalg.solve(p10.asarray(SPD), p10.asarray(bb))
    np.testing.assert_allclose(_np(out), np.linalg.solve(SPD, bb[None]))
    with pytest.raises(p10.ShapeError, match=r"linalg\.solve"):
        p10.linalg.solve(p10.asarray(SPD), p10.ones(4, dtype="float64"))


def test_vector_norm_orders_and_composed_names() -> None:
    x = RNG.normal(size=(3, 4))
    for ord_ in (1, 2, 3, np.inf, -np.inf, 0):
        got = p10.linalg.vector_norm(p10.asarray(x), axis=1, ord=ord_)
        np.testing.assert_allclose(_np(got), np.linalg.norm(x, ord_, axis=1))
    assert p10.linalg.vector_norm(p10.asarray(x), keepdims=True).shape == (1, 1)
    c = p10.linalg.cross(p10.asarray([[1.0, 0, 0]]), p10.asarray([0.0, 1, 0]))
    assert c.tolist() == [[0.0, 0.0, 1.0]]
    assert p10.linalg.outer(p10.ones(2), p10.ones(3)).shape == (2, 3)
    assert p10.linalg.matrix_transpose(p10.ones((2, 3))).shape == (3, 2)


def test_linalg_errors_name_the_function() -> None:
    with pytest.raises(p10.ShapeError, match=r"linalg\.inv: needs a stack of square matrices"):
        p10.linalg.inv(p10.ones((2, 3)))
    with pytest.raises(p10.ArgumentError, match=r"linalg\.matrix_norm: ord"):
        p10.linalg.matrix_norm(p10.ones((2, 2)), ord=3)
    with pytest.raises(p10.ArgumentError, match="inv"):
        p10.linalg.inv(p10.zeros((2, 2)))  # singular: the kernel's error, named


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_functions_match_numpy(norm: str) -> None:
    z, x = p10.asarray(Z), p10.asarray(Z.real)
    np.testing.assert_allclose(_np(p10.fft.fft(z, n=5, norm=norm)), np.fft.fft(Z, 5, norm=norm))
    np.testing.assert_allclose(_np(p10.fft.ifft(z, norm=norm)), np.fft.ifft(Z, norm=norm))
    np.testing.assert_allclose(_np(p10.fft.fftn(z, norm=norm)), np.fft.fftn(Z, norm=norm))
    np.testing.assert_allclose(_np(p10.fft.ifftn(z, s=(3, 3), norm=norm)),
                               np.fft.ifftn(Z, (3, 3), axes=(0, 1), norm=norm))  # fmt: skip
    np.testing.assert_allclose(_np(p10.fft.rfft(x, norm=norm)), np.fft.rfft(Z.real, norm=norm))
    np.testing.assert_allclose(_np(p10.fft.irfft(z, n=7, norm=norm)),
                               np.fft.irfft(Z, 7, norm=norm))  # fmt: skip
    np.testing.assert_allclose(_np(p10.fft.rfftn(x, norm=norm)), np.fft.rfftn(Z.real, norm=norm))
    np.testing.assert_allclose(_np(p10.fft.irfftn(z, norm=norm)), np.fft.irfftn(Z, norm=norm))
    np.testing.assert_allclose(_np(p10.fft.hfft(z, norm=norm)), np.fft.hfft(Z, norm=norm))
    np.testing.assert_allclose(_np(p10.fft.ihfft(x, norm=norm)), np.fft.ihfft(Z.real, norm=norm))


def test_fft_helpers_and_dtypes() -> None:
    assert p10.fft.fft(p10.ones(4, dtype="float32")).dtype == p10.complex64
    assert p10.fft.irfft(p10.ones(3, dtype="complex128")).dtype == p10.float64
    np.testing.assert_allclose(_np(p10.fft.fftfreq(5, d=0.5)), np.fft.fftfreq(5, 0.5))
    np.testing.assert_allclose(_np(p10.fft.rfftfreq(6)), np.fft.rfftfreq(6))
    y = np.arange(12).reshape(3, 4)
    assert p10.fft.fftshift(p10.asarray(y)).tolist() == np.fft.fftshift(y).tolist()
    assert p10.fft.ifftshift(p10.asarray(y), axes=1).tolist() == np.fft.ifftshift(y, 1).tolist()
    with pytest.raises(p10.DTypeError, match=r"fft\.rfft: needs a real tensor"):
        p10.fft.rfft(p10.asarray(Z))
    with pytest.raises(p10.ArgumentError, match="norm"):
        p10.fft.fft(p10.asarray(Z), norm="both")


def test_complex_promotion_creation_and_parts() -> None:
    z = p10.asarray([1 + 2j])
    assert z.dtype == p10.complex64 and p10.asarray(1j).dtype == p10.complex64
    assert (p10.ones(1, dtype="float64") * z).dtype == p10.complex128
    assert (p10.ones(1, dtype="float32") * 1j).dtype == p10.complex64
    assert (p10.arange(2) * z).dtype == p10.complex64
    assert p10.result_type(p10.complex64, p10.float64) == p10.complex128
    assert p10.full((1,), 2j).dtype == p10.complex64
    assert p10.abs(z).dtype == p10.float32 and p10.real(z).dtype == p10.float32
    assert complex(z[0]) == 1 + 2j and p10.imag(p10.ones(2)).tolist() == [0.0, 0.0]
    assert p10.vecdot(p10.asarray([1j, 2]), p10.asarray([1j, 1])).item() == 3
    with p10.default_dtype("float64"):
        assert p10.asarray([1j]).dtype == p10.complex128


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_floor_divide_special_cases_with_one_infinite_operand() -> None:
    inf = float("inf")
    x = p10.asarray([inf, -inf, 1.0, -1.0, 7.0], dtype="float64")
    y = p10.asarray([2.0, 2.0, -inf, inf, 2.0], dtype="float64")
    out = _np(x // y)
    np.testing.assert_array_equal(out, [inf, -inf, -0.0, -0.0, 3.0])
    assert np.signbit(out[2]) and np.signbit(out[3])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_complex_special_values_of_expm1_and_tanh_follow_the_standard() -> None:
    inf, nan = float("inf"), float("nan")
    z = np.array([complex(-inf, inf), complex(-0.0, 0.0), complex(inf, nan)])
    out = _np(p10.expm1(p10.asarray(z, dtype="complex128")))
    assert out[0] == -1 and not np.signbit(out[1].real) and np.isinf(out[2].real)
    t = _np(p10.tanh(p10.asarray(np.array([complex(inf, 2.0), complex(-inf, -2.0)]))))
    assert t.tolist() == [1 + 0j, -1 - 0j]
    assert not np.signbit(t[0].imag) and np.signbit(t[1].imag)


def test_norms_of_complex_tensors_are_real() -> None:
    z = p10.asarray(Z)
    assert p10.linalg.vector_norm(z).dtype == p10.float64
    np.testing.assert_allclose(_np(p10.linalg.vector_norm(z)), np.linalg.norm(Z))
    np.testing.assert_allclose(_np(p10.linalg.matrix_norm(z)), np.linalg.norm(Z))
