"""Choosing backends and devices, moving tensors between them, Dask laziness and clusters, and
the NumPy path without any optional library."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import p10
import tpx as tp
from p10.backends import array_api_backend
from tests.helpers.backends import BACKENDS, load


# -- selection ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(BACKENDS))
def test_creation_use_backend_and_to_select_the_backend(name: str) -> None:
    backend = load(name)
    assert p10.asarray([1.0], backend=name).backend is backend
    assert p10.zeros((2,), backend=name, device="cpu").backend is backend
    with p10.use_backend(name):
        assert p10.ones(3).backend is backend
        assert tp.randn((2, 2)).backend is backend
    moved = p10.arange(4).to(backend=name)
    assert moved.backend is backend and moved.tolist() == [0, 1, 2, 3]
    assert moved.to(backend="numpy").backend.name == "numpy"


def test_unknown_device_is_an_error_naming_the_backend() -> None:
    with pytest.raises(p10.BackendError, match=r"'numpy' on device 'cuda'"):
        p10.asarray([1.0], backend="numpy", device="cuda")


def test_mixing_backends_in_one_op_names_the_backends() -> None:
    load("torch")
    with pytest.raises(p10.BackendError, match=r"add.*'numpy'.*'torch'"):
        p10.ones(2) + p10.ones(2, backend="torch")


def test_op_outside_the_standard_on_an_accelerator_raises_missing_kernel() -> None:
    pytest.importorskip("array_api_compat")
    b = array_api_backend.make_array_api_backend("numpy", name="no_host", host_fallback=False)
    with p10.register_backend(b), pytest.raises(p10.MissingKernelError, match=r"erf.*'no_host'"):
        p10.erf(p10.ones(2, backend="no_host"))


def test_user_defined_op_runs_on_a_cpu_backend_through_numpy() -> None:
    load("array_api_strict")
    op = p10.define_op("backends_test_triple", lambda x: x * 3)
    out = p10.apply(op, p10.ones(2, backend="array_api_strict"))
    assert out.backend.name == "array_api_strict" and out.tolist() == [3.0, 3.0]


# -- DLPack ------------------------------------------------------------------------------------
def test_dlpack_shares_memory_from_torch_into_p10() -> None:
    torch = pytest.importorskip("torch")
    load("torch")
    source = torch.arange(4.0)
    t = p10.from_dlpack(source, backend="torch")
    source[0] = 10.0
    assert t.backend.name == "torch" and t.tolist() == [10.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("name", list(BACKENDS))
def test_dlpack_between_backends(name: str) -> None:
    load(name)
    x = p10.asarray([[1.0, 2.0], [3.0, 4.0]], backend=name)
    assert np.from_dlpack(x).tolist() == x.tolist()
    assert p10.from_dlpack(x, backend="numpy").tolist() == x.tolist()


# -- accelerators (skip without one) -------------------------------------------------------------
def test_torch_cuda_when_a_gpu_is_present() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = p10.asarray([[1.0, -2.0], [3.0, 4.0]], backend="torch", device="cuda")
    assert x.backend.name == "torch:cuda" and x._data.is_cuda
    assert (x @ x).relu().sum().item() == 41.0
    assert p10.conv2d(x.reshape((1, 1, 2, 2)), x.reshape((1, 1, 2, 2))).item() == 30.0


def test_cupy_when_a_gpu_is_present() -> None:
    pytest.importorskip("array_api_compat")
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no CUDA device")
    x = p10.asarray([[1.0, -2.0], [3.0, 4.0]], backend="cupy")
    assert (x @ x).relu().sum().item() == 41.0


# -- Dask --------------------------------------------------------------------------------------
def test_dask_ops_stay_lazy_and_compute_chunk_by_chunk() -> None:
    da = pytest.importorskip("dask.array")
    load("dask")
    from p10.backends import dask_extras

    big = da.ones((2000, 500), chunks=(100, 500), dtype="float32")
    x = dask_extras.from_dask(big)
    y = (x * 2.0).exp().sum(axis=1).log()
    assert isinstance(y._data, da.Array) and y._data.npartitions == 20  # nothing computed yet
    np.testing.assert_allclose(y.numpy(), np.full(2000, np.log(500 * np.exp(2.0))), rtol=1e-5)


def test_dask_training_step_on_a_local_cluster() -> None:
    pytest.importorskip("distributed")
    load("dask")
    from p10.backends import dask_extras

    client = dask_extras.connect(processes=False, n_workers=1, threads_per_worker=1)
    try:
        with p10.use_backend("dask"):
            w = tp.asarray([[0.5, -1.0], [2.0, 0.25]], dtype="float64", requires_grad=True)
            x = tp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype="float64")
            loss = (x @ w).tanh().sum()
            loss.backward()
            dask_extras.persist(w.grad)
            assert client.has_what(), "the cluster holds the persisted gradient"
            grad = w.grad.numpy()
    finally:
        client.close()
        client.cluster.close()
    xn, wn = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5, -1.0], [2.0, 0.25]])
    want = xn.T @ (1 - np.tanh(xn @ wn) ** 2)
    np.testing.assert_allclose(grad, want, rtol=1e-12)


# -- without the optional libraries ---------------------------------------------------------------
_BLOCKED = ("torch", "dask", "distributed", "array_api_compat", "array_api_strict", "cupy", "jax")


def test_importing_p10_and_tpx_imports_no_optional_library() -> None:
    code = "import sys, p10, tpx; print([m for m in sys.modules if m.split('.')[0] in %r])"
    out = subprocess.run([sys.executable, "-c", code % (_BLOCKED,)], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_numpy_path_without_optional_libraries() -> None:
    code = textwrap.dedent(
        f"""
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {_BLOCKED!r}:
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, Block())
        import p10, tpx as tp
        x = tp.asarray([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0]
        assert p10.backends.available() == []
        try:
            p10.asarray([1.0], backend="torch")
        except p10.BackendError as e:
            print("error:", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "requirements-backends.txt" in out.stdout
