"""Kernels chosen by dtype kind: ``tanh``/``expm1``'s NumPy kernels fix complex special values
(p10._numpy_special); on real dtypes P10's floating shortcut runs the bare ufunc instead, which
must give the same values and leave overridden kernels in charge."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import p10
from p10 import Op
from p10._numpy_special import REAL_UFUNC

SPECIAL = [0.0, -0.0, 0.5, -2.0, 30.0, np.inf, -np.inf, np.nan, 1e-8]


def _python_calls(fn) -> list[str]:
    """Qualified names of the Python functions that ``fn()`` calls."""
    names: list[str] = []

    def profile(frame, event, arg):
        if event == "call":
            names.append(f"{frame.f_globals.get('__name__')}.{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return names


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("general", sorted(REAL_UFUNC, key=lambda f: f.__name__))
def test_bare_ufunc_equals_the_general_kernel_on_real_dtypes(general, dtype):
    x = np.array(SPECIAL, dtype=dtype)
    with np.errstate(all="ignore"):
        want, got = general(x), REAL_UFUNC[general](x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaN == NaN here; signs of zeros below
    assert (np.signbit(got) == np.signbit(want)).all()


def test_real_tanh_runs_no_python_kernel_complex_tanh_does():
    x = p10.asarray(np.linspace(-2, 2, 5, dtype=np.float32))
    real_calls = _python_calls(lambda: x.tanh())
    assert "p10._numpy_special.tanh" not in real_calls
    z = p10.asarray(np.array([complex(np.inf, 1.0), complex(0.5, -0.25)]))
    complex_calls = _python_calls(lambda: z.tanh())
    assert "p10._numpy_special.tanh" in complex_calls
    out = z.tanh().numpy()
    assert out[0] == 1 + 0j and not np.signbit(out[0].imag)  # +0: the sign of y = 1.0
    np.testing.assert_allclose(out[1], np.tanh(complex(0.5, -0.25)), rtol=1e-12)


def test_real_tanh_uses_an_overridden_or_registered_kernel():
    x = p10.asarray([0.0, 3.0])
    with p10.override_kernel(Op.TANH, lambda a: np.clip(a, -1, 1)):
        assert x.tanh().tolist() == [0.0, 1.0]
    with p10.register_kernel(Op.TANH, "numpy", lambda a: a * 0 + 7):
        assert x.tanh().tolist() == [7.0, 7.0]
    assert x.tanh().tolist() == pytest.approx([0.0, np.tanh(3.0)])


def test_real_tanh_values_match_numpy_and_tpx_gradient():
    import tpx as tp

    a = np.array([-1.5, 0.0, 0.25], dtype=np.float64)
    x = tp.asarray(a, requires_grad=True)
    y = x.tanh()
    np.testing.assert_array_equal(y.numpy(), np.tanh(a))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh(a) ** 2, rtol=1e-12)
