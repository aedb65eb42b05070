"""Kernel equivalence: every op of every optional backend against the NumPy spec backend.

Each case of ``_kernel_cases.CASES`` runs through the backend's kernel on the backend's arrays
and through the NumPy kernel; shapes and dtypes must be equal and values equal (integers and
booleans) or close (floats, to a few ulps of the dtype). The comparison itself is shown to
fail on a planted wrong kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import p10
from p10 import Op
from p10.backends import numpy_backend
from tests.helpers.backends import BACKENDS, load
from tests.helpers.kernel_cases import CASES, COVERED, KCase

TOL = {np.dtype("float32"): (2e-5, 2e-6), np.dtype("float64"): (1e-12, 1e-13)}


def run_kernel(backend: p10.Backend, case: KCase) -> np.ndarray:
    """``case`` through ``backend``'s kernel, as NumPy, with its dtype checked to be a
    NumPy dtype the backend reports."""
    arrays = [backend.from_numpy(a) for a in case.inputs()]
    out = backend.kernel(case.op)(*arrays, **case.params)
    dtype = backend.dtype_of(out)
    host = np.asarray(backend.to_numpy(out))
    assert host.dtype == dtype, f"{case.id}: dtype_of says {dtype}, the values are {host.dtype}"
    return host


def expected(case: KCase) -> np.ndarray:
    """``case`` through the NumPy spec kernel."""
    return np.asarray(numpy_backend.KERNELS[case.op](*case.inputs(), **case.params))


def assert_equivalent(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Same shape and dtype; equal values, or close ones for floats (NaN matching NaN)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, spec {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, spec {want.dtype}"
    if want.dtype.kind == "f":
        rtol, atol = TOL[want.dtype]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def test_cases_cover_every_op() -> None:
    assert [op.value for op in Op if op not in COVERED] == []


@pytest.mark.parametrize("name", list(BACKENDS))
def test_backend_has_a_kernel_for_every_op(name: str) -> None:
    backend = load(name)
    assert [op.value for op in Op if op not in backend.kernels] == []


@pytest.mark.parametrize("name", list(BACKENDS))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_kernel_matches_numpy(name: str, case: KCase) -> None:
    backend = load(name)
    got = run_kernel(backend, case)
    assert_equivalent(got, expected(case), f"{case.id} on {name}")


@pytest.mark.parametrize("name", list(BACKENDS))
def test_comparison_fails_on_a_planted_wrong_kernel(name: str) -> None:
    backend = load(name)
    case = next(c for c in CASES if c.id == "add-f32")
    with p10.register_kernel(Op.ADD, name, backend.kernel(Op.SUB)):
        got = run_kernel(backend, case)
    with pytest.raises(AssertionError):
        assert_equivalent(got, expected(case), case.id)


@pytest.mark.parametrize("name", list(BACKENDS))
def test_comparison_fails_on_a_wrong_dtype(name: str) -> None:
    backend = load(name)
    case = next(c for c in CASES if c.id == "sum-int32")
    total = backend.kernel(Op.SUM)(*map(backend.from_numpy, case.inputs()), **case.params)
    wrong = backend.kernel(Op.CAST)(total, dtype=np.dtype("int32"))
    with pytest.raises(AssertionError, match="dtype"):
        assert_equivalent(np.asarray(backend.to_numpy(wrong)), expected(case), case.id)


def _public_api_values(name: str) -> list[Any]:
    x = p10.asarray([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], backend=name)
    y = (x * 2 + 1).relu() @ x.T
    return [y.tolist(), x.max(axis=1).tolist(), x[:, p10.asarray([2, 0], backend=name)].tolist()]


@pytest.mark.parametrize("name", list(BACKENDS))
def test_public_functions_give_the_numpy_values(name: str) -> None:
    load(name)
    assert _public_api_values(name) == _public_api_values("numpy")
