"""Backends: every registered backend agrees with the NumPy spec on every kernel case, a test-only
backend with a subset of kernels runs what it has and names what it lacks, and registrations
undo cleanly."""

from __future__ import annotations

import numpy as np
import pytest

import p10
from p10 import Op
from tests.helpers.p10_cases import (
    KERNEL_CASES,
    SUBSET_NAME,
    SUBSET_OPS,
    Box,
    assert_same_array,
    make_subset_backend,
    run_case,
)


@pytest.fixture(params=[*p10.list_backends(), SUBSET_NAME])
def backend(request):
    """Each backend registered when the tests were collected, plus the test-only one."""
    if request.param != SUBSET_NAME:
        yield p10.get_backend(request.param)
        return
    with p10.register_backend(make_subset_backend()):
        yield p10.get_backend(SUBSET_NAME)


def test_case_table_covers_every_op():
    missing = [op.value for op in Op if op not in {c.op for c in KERNEL_CASES}]
    assert not missing, f"ops without a kernel case: {missing}"


@pytest.mark.parametrize("case", KERNEL_CASES, ids=[c.id for c in KERNEL_CASES])
def test_kernel_matches_numpy_spec(case, backend):
    expected = run_case(case, "numpy")
    if case.op not in backend.kernels:
        with pytest.raises(
            p10.MissingKernelError, match=rf"{case.op.value}: backend '{backend.name}'"
        ):
            run_case(case, backend)
        return
    originals = [a.copy() for a in case.inputs]
    assert_same_array(run_case(case, backend), expected, f"{case.id} on {backend.name}")
    for before, after in zip(originals, case.inputs):
        np.testing.assert_array_equal(before, after, err_msg="a kernel wrote into its input")


def test_spec_kernels_never_write_into_inputs():
    spec = p10.get_backend("numpy")
    for case in KERNEL_CASES:
        arrays = [a.copy() for a in case.inputs]
        for a in arrays:
            a.flags.writeable = False
        spec.kernel(case.op)(*arrays, **case.params)


# -- the test-only backend ---------------------------------------------------------------------
def test_subset_backend_runs_the_ops_it_has(subset_backend):
    x = p10.asarray([[1.0, -2.0], [3.0, 4.0]], backend=SUBSET_NAME)
    assert isinstance(x._data, Box) and x.backend is subset_backend
    y = ((x @ x.T + 1) * x).tanh().sum(axis=0)
    expected = np.tanh((x.numpy() @ x.numpy().T + 1) * x.numpy()).sum(axis=0)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    assert y.backend is subset_backend
    assert repr(x).endswith("dtype=float32, backend='subset-test')")
    assert (x > 0).tolist() == [[True, False], [True, True]]


@pytest.mark.parametrize(
    "call, op",
    [
        (lambda x: p10.log(x), Op.LOG),
        (lambda x: x.log(), Op.LOG),
        (lambda x: x.sigmoid(), Op.SIGMOID),
        (lambda x: x.mean(), Op.MEAN),
        (lambda x: x.softmax(), Op.SOFTMAX),
        (lambda x: p10.concat([x, x]), Op.CONCAT),
        (lambda x: x**2, Op.POW),
        (lambda x: x // x, Op.FLOORDIV),
    ],
    ids=lambda v: v.value if isinstance(v, Op) else "",
)
def test_subset_backend_names_op_and_backend_for_the_rest(subset_backend, call, op):
    x = p10.ones((2, 3), backend=SUBSET_NAME)
    with pytest.raises(p10.MissingKernelError) as info:
        call(x)
    assert isinstance(info.value, NotImplementedError)
    message = str(info.value)
    assert f"{op.value}: backend '{SUBSET_NAME}' has no kernel" in message
    assert "register_kernel" in message


def test_subset_backend_lacks_every_op_outside_its_table(subset_backend):
    for op in Op:
        if op in SUBSET_OPS:
            assert callable(subset_backend.kernel(op))
        else:
            with pytest.raises(p10.MissingKernelError, match=f"{op.value}: backend"):
                subset_backend.kernel(op)


def test_subset_backend_takes_the_fast_path_and_falls_back(subset_backend):
    calls = []
    add = subset_backend.kernels[Op.ADD]
    subset_backend.kernels[Op.ADD] = lambda a, b: calls.append((a.dtype, b.dtype)) or add(a, b)
    x = p10.ones(2, backend=SUBSET_NAME)
    assert (x + x).tolist() == [2.0, 2.0] and calls == [("box-float32", "box-float32")]
    i = p10.asarray([1, 2], backend=SUBSET_NAME)
    assert (x + i).dtype == p10.float32  # slow path: promotion casts i first
    assert calls[-1] == ("box-float32", "box-float32")


def test_register_kernel_fills_a_gap_until_removed(subset_backend):
    x = p10.full((2,), 4.0, backend=SUBSET_NAME)
    handle = p10.register_kernel(Op.SQRT, SUBSET_NAME, lambda b: Box(np.sqrt(b.value)))
    assert p10.sqrt(x).tolist() == [2.0, 2.0]
    handle.remove()
    with pytest.raises(p10.MissingKernelError, match="sqrt"):
        p10.sqrt(x)
    handle.remove()  # a second remove does nothing


def test_register_kernel_replaces_and_restores_a_numpy_kernel():
    x = p10.asarray([1.0, 2.0])
    with p10.register_kernel(Op.ADD, "numpy", np.subtract):
        assert (x + x).tolist() == [0.0, 0.0]  # the fast path sees the replacement too
        assert p10.add(x, x).tolist() == [0.0, 0.0]
    assert (x + x).tolist() == [2.0, 4.0]


def test_subset_backend_in_place_writes_and_views(subset_backend):
    x = p10.zeros((2, 3), backend=SUBSET_NAME)
    view = x.reshape((3, 2))
    x[0, 1] = 5.0
    x += 1.0
    assert x.tolist() == [[1.0, 6.0, 1.0], [1.0, 1.0, 1.0]]
    assert x.version == view.version == 2
    x[p10.asarray([1], backend=SUBSET_NAME)] = 3.0
    assert x.tolist()[1] == [3.0, 3.0, 3.0]


def test_backend_without_setitem_refuses_in_place_writes():
    backend = make_subset_backend("no-setitem")
    backend.setitem = None
    with p10.register_backend(backend):
        x = p10.zeros(3, backend="no-setitem")
        with pytest.raises(p10.MissingKernelError, match="backend 'no-setitem' cannot write"):
            x[0] = 1.0


def test_subset_backend_moves_and_converts(subset_backend):
    x = p10.arange(6, backend=SUBSET_NAME).reshape((2, 3))
    assert x.to(backend="numpy").backend.name == "numpy"
    assert np.asarray(x).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert np.from_dlpack(x).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert x.to("float64").dtype == p10.float64 and x.to("float64").backend is subset_backend
    assert [t.tolist() for t in p10.nonzero(x > 3)] == [[1, 1], [1, 2]]


# -- selection, mixing, registration -----------------------------------------------------------
def test_use_backend_selects_the_backend_of_new_tensors(subset_backend):
    with p10.use_backend(SUBSET_NAME) as chosen:
        assert chosen is subset_backend
        made = [p10.zeros(2), p10.asarray([1, 2]), p10.arange(3), p10.randn((2,)), p10.eye(2)]
        assert all(t.backend is subset_backend for t in made)
    assert p10.zeros(2).backend.name == "numpy"


def test_use_backend_restores_on_error(subset_backend):
    with pytest.raises(RuntimeError), p10.use_backend(SUBSET_NAME):
        raise RuntimeError
    assert p10.get_backend().name == "numpy"


@pytest.mark.parametrize(
    "call",
    [
        lambda a, b: a + b,
        lambda a, b: p10.add(a, b),
        lambda a, b: a @ b,
        lambda a, b: p10.where(a > 0, a, b),
    ],
    ids=["operator", "function", "matmul", "where"],
)
def test_mixing_backends_is_a_clear_error(subset_backend, call):
    a = p10.ones((2, 2))
    b = p10.ones((2, 2), backend=SUBSET_NAME)
    with pytest.raises(p10.BackendError) as info:
        call(a, b)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert "different backends" in message and "'numpy'" in message
    assert f"'{SUBSET_NAME}'" in message and ".to(backend=" in message


def test_unknown_backend_names_the_known_ones():
    with pytest.raises(
        p10.BackendError, match=r"unknown backend 'nope'.*registered backends: numpy"
    ):
        p10.zeros(2, backend="nope")
    with pytest.raises(p10.BackendError), p10.use_backend("nope"):
        pass


def test_register_backend_twice_is_an_error(subset_backend):
    with pytest.raises(p10.BackendError, match="exists already"):
        p10.register_backend(make_subset_backend())


def test_backend_handle_removes_the_backend():
    handle = p10.register_backend(make_subset_backend("temporary"))
    assert "temporary" in p10.list_backends()
    handle.remove()
    assert "temporary" not in p10.list_backends()


def test_define_op_registers_a_kernel_until_removed():
    op = p10.define_op("test_softplus", lambda x: np.logaddexp(x, 0.0))
    try:
        assert p10.op_from_name("test_softplus") is op
        out = p10.apply(op, p10.zeros(2))
        np.testing.assert_allclose(out.numpy(), np.log(2.0), rtol=1e-6)
        with pytest.raises(p10.ArgumentError, match="exists already"):
            p10.define_op("test_softplus", np.negative)
        with pytest.raises(p10.ArgumentError, match="exists already"):
            p10.define_op("add", np.add)
    finally:
        op.remove()
    with pytest.raises(p10.MissingKernelError, match="test_softplus: backend 'numpy'"):
        p10.apply(op, p10.zeros(2))
    with pytest.raises(p10.ArgumentError, match="unknown op name"):
        p10.op_from_name("test_softplus")
    again = p10.define_op("test_softplus", np.negative)  # the name is free again
    assert p10.apply(again, p10.ones(1)).tolist() == [-1.0]
    again.remove()
    again.remove()  # a second remove does nothing


def test_define_op_validates_at_definition_time():
    with pytest.raises(TypeError, match="cannot take 2 positional"):
        p10.define_op("test_bad_arity", lambda x: x, arity=2)
    with pytest.raises(TypeError, match="must be callable"):
        p10.define_op("test_not_callable", 3)
    with pytest.raises(ValueError, match="identifier"):
        p10.define_op("bad name!", np.negative)
    with pytest.raises(ValueError, match="unknown op name"):
        p10.op_from_name("test_never_defined")
