"""Direct NumPy calls in replay code (tpx._plan_direct): each gives its kernel's bits, the
MLP step uses them and replays bitwise, and what they cannot express keeps the kernel."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import p10
import tpx as tp
from p10._ops import Op
from p10.backends import numpy_backend as nb
from tpx._plan import KERNEL, Slot, Step
from tpx._plan_direct import DST, _forms, direct_form

NUMPY = p10.asarray(0.0)._backend
ON_NUMPY = {i: NUMPY for i in range(4)}


def _slot(a: np.ndarray) -> Slot:
    return Slot(KERNEL, a.shape, a.dtype.name, a.nbytes)


def _values(rng: np.random.Generator, shape: tuple, dtype: Any) -> np.ndarray:
    a = rng.standard_normal(shape).astype(dtype)
    a.flat[:4] = [np.nan, -0.0, np.inf, -np.inf]  # NOTE: signs of zero and NaN must match too
    return a


def _run_form(kernel: Any, inputs: list, params: dict, out_like: np.ndarray) -> Any:
    arrays = [np.array(a, copy=True) for a in inputs]
    slots = [_slot(a) for a in arrays] + [_slot(out_like)]
    step = Step("kernel", "x", kernel, tuple(range(len(arrays))), params, len(arrays))
    form = direct_form(kernel, step, slots, ON_NUMPY)
    assert form is not None
    callee, extra = form
    result = callee(*arrays, *[arrays[0] if x is DST else x for x in extra])
    return arrays, result


REDUCE_PARAMS = [{"axis": (1,), "keepdims": True}, {"axis": (0,), "keepdims": False}]


@pytest.mark.parametrize("op", [Op.SUM, Op.PROD, Op.MAX, Op.MIN, Op.ALL, Op.ANY])
@pytest.mark.parametrize("params", REDUCE_PARAMS)
def test_a_direct_reduction_gives_the_kernels_bits(op: Op, params: dict) -> None:
    x = _values(np.random.default_rng(0), (7, 5), np.float32)
    kernel = nb.KERNELS[op]
    want = kernel(x, **params)
    _, got = _run_form(kernel, [x], params, want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL, Op.DIV])
def test_a_direct_in_place_call_writes_the_kernels_bits_into_its_destination(op: Op) -> None:
    rng = np.random.default_rng(1)
    dst, other = _values(rng, (6, 4), np.float32), _values(rng, (4,), np.float32)
    want = dst.copy()
    with np.errstate(all="ignore"):
        nb.INPLACE[op](want, other)
        arrays, _ = _run_form(nb.INPLACE[op], [dst, other], {}, dst)
    assert arrays[0].tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_direct_relu_and_permute_give_the_kernels_bits(dtype: Any) -> None:
    x = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(dtype)
    for op, params in ((Op.RELU, {}), (Op.PERMUTE, {"axes": (2, 0, 1)})):
        want = nb.KERNELS[op](x, **params)
        _, got = _run_form(nb.KERNELS[op], [x], params, want)
        assert got.dtype == want.dtype and got.strides == want.strides
        assert got.tobytes() == want.tobytes()


def test_what_a_direct_call_cannot_express_keeps_the_kernel() -> None:
    x = np.ones((3, 4), np.float32)
    slots = [_slot(x), _slot(np.float32(0.0).reshape(()))]  # a 0-d result
    full = Step("kernel", "sum", nb.KERNELS[Op.SUM], (0,), {"axis": None, "keepdims": False}, 1)
    assert direct_form(full.kernel, full, slots, ON_NUMPY) is None  # needs out=...: 0-d array
    replaced = lambda x, *, axis=None, keepdims=False: x.sum(axis, keepdims=keepdims)
    partial = Step("kernel", "sum", nb.KERNELS[Op.SUM], (0,), {"axis": (0,), "keepdims": False}, 1)
    row = [_slot(x), _slot(x.sum(0))]
    assert direct_form(partial.kernel, partial, row, ON_NUMPY) is not None
    assert direct_form(replaced, partial, row, ON_NUMPY) is None  # not the backend's kernel
    borrowed = {0: SimpleNamespace(array_type=list), 1: NUMPY}  # the kernel, not NumPy arrays
    assert direct_form(partial.kernel, partial, row, borrowed) is None
    assert set(_forms()) >= {nb.KERNELS[Op.SUM], nb.INPLACE[Op.SUB], nb.KERNELS[Op.PERMUTE]}


def _mlp_step(params: list[tp.Tensor], x: tp.Tensor, onehot: tp.Tensor) -> Any:
    def step() -> tp.Tensor:
        h = x
        for k in range(0, len(params) - 2, 2):
            h = (h @ params[k] + params[k + 1]).relu()
        logp = tp.log_softmax(h @ params[-2] + params[-1], axis=-1)
        loss = -(logp * onehot).sum() / x.shape[0]
        loss.backward()
        with tp.no_grad():
            for p in params:
                p -= 0.01 * p.grad
                p.grad = None
        return loss.detach()

    return step


def _mlp_state(seed: int) -> tuple[list[tp.Tensor], tp.Tensor, tp.Tensor]:
    rng = np.random.default_rng(seed)
    sizes = (32, 24, 16, 10)
    params = []
    for a, b in zip(sizes, sizes[1:]):
        params.append(
            tp.asarray(rng.standard_normal((a, b)).astype(np.float32) / a, requires_grad=True)
        )
        params.append(tp.asarray(np.zeros(b, np.float32), requires_grad=True))
    x = tp.asarray(rng.standard_normal((8, 32)).astype(np.float32))
    onehot = tp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 8)])
    return params, x, onehot


def test_the_mlp_step_calls_numpy_directly_and_replays_bitwise() -> None:
    eager_state, compiled_state = _mlp_state(3), _mlp_state(3)
    eager, compiled = _mlp_step(*eager_state), tp.compile(_mlp_step(*compiled_state))
    for _ in range(4):
        assert eager().numpy().tobytes() == compiled().numpy().tobytes()
    for p, q in zip(eager_state[0], compiled_state[0]):
        assert p.numpy().tobytes() == q.numpy().tobytes()
    source = "\n".join(seg.run.source for seg in compiled.plans()[0].segments)
    assert "axes=" not in source  # the matmul backward's permutes: direct
    assert "None, None, True)" in source  # the log-softmax backward's keepdims sum
    assert "None, None, False)" in source  # the bias gradients' sums
    assert source.count("keepdims=") == 1  # the returned loss's 0-d sum keeps the kernel
    assert compiled.stats.replays == 3 and compiled.stats.eager_calls == 0


def test_a_captured_target_changed_in_place_between_calls_is_followed_bitwise() -> None:
    # NOTE: -onehot / batch is computed from a captured tensor: never folded into a constant
    # (its version could change between calls), so the plan multiplies it at every replay
    eager_state, compiled_state = _mlp_state(4), _mlp_state(4)
    eager, compiled = _mlp_step(*eager_state), tp.compile(_mlp_step(*compiled_state))
    for k in range(4):
        assert eager().numpy().tobytes() == compiled().numpy().tobytes()
        with tp.no_grad():
            for onehot in (eager_state[2], compiled_state[2]):
                onehot[k % 8] = tp.asarray(np.roll(np.eye(10, dtype=np.float32)[k], k))
    for p, q in zip(eager_state[0], compiled_state[0]):
        assert p.numpy().tobytes() == q.numpy().tobytes()
    assert compiled.stats.replays == 3 and compiled.stats.eager_calls == 0
    onehot_slots = {i for i, s in enumerate(compiled.plans()[0].slots) if s.kind == "capture"}
    reads = [s for s in compiled.plans()[0].steps if set(s.inputs) & onehot_slots]
    # the backward's seed times onehot still runs at every replay (not folded)
    assert any(s.op == "mul" and s.origin[0] == "backward" for s in reads)
