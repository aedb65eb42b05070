"""What a cluster worker checks, without a cluster: each group of the local check packed
column-wise (as it is shipped), unpacked and checked from its stacked columns gives the same
outcomes as the group checked in one process, and the unpacked records equal the originals."""

from __future__ import annotations

import numpy as np

import p10
import tpx as tp
from p10 import Op
from tpx_inspect.checks import LocalOptions, capture_call
from tpx_inspect.checks._differences import NAN_VALUES
from tpx_inspect.checks.cluster import columns, pack, unpack
from tpx_inspect.checks.local import backward_order, check_group, plan


def _graph():
    rng = np.random.default_rng(2)
    x = tp.asarray(rng.standard_normal((3, 5)).astype(np.float32), requires_grad=True)
    w = tp.asarray(rng.standard_normal((5, 5)).astype(np.float32) * 0.3, requires_grad=True)

    def f(x, w):
        h = x
        for k in range(12):
            z = (h @ w).tanh()
            h = z * 0.5 + z.sin() * 0.5  # scalar constants: 0-d values of every node
            if k == 6:
                h = h + tp.asarray(np.full(5, np.nan, dtype=np.float32)) * 0.0 + 1.0
        return (h * h).mean()  # a 0-d output

    handle = tp.register_rule(Op.TANH, lambda ctx, g: (g * p10.tanh(ctx.inputs[0]),), save=(0,))
    try:  # a planted wrong rule: findings to compare
        return capture_call(f, [x, w])
    finally:
        handle.remove()


def _fields(node):
    return {k: v for k, v in vars(node).items() if k not in ("inputs", "output")}


def _same_values(a, b):
    return all(_same(x, y) for x, y in zip(a, b, strict=True))


def _same(x, y):
    if not isinstance(x, np.ndarray):
        return type(x) is type(y) and x == y
    same_nan = x.dtype.kind == "f"
    return (type(y) is np.ndarray and x.shape == y.shape and x.dtype == y.dtype
            and np.array_equal(x, y, equal_nan=same_nan))  # fmt: skip


def test_a_packed_group_checks_as_in_one_process():
    graph = _graph()
    opts = LocalOptions()
    _, groups = plan(graph, backward_order(graph), opts)
    assert any(len(g) > 1 for g in groups)
    found, nan = 0, 0
    for group in groups:
        p = pack(group)
        items = unpack(p)
        alone = check_group(group, opts)
        assert check_group(items, opts, columns(p)) == alone
        found += sum(f is not None for _, f, _ in alone.values())
        nan += sum(skip == NAN_VALUES for skip, _, _ in alone.values())
        for (node, ex), (back, ex_back) in zip(group, items, strict=True):
            assert _fields(back) == {**_fields(node), "rule": back.rule}
            assert _same_values(back.inputs, node.inputs)
            assert _same_values([back.output], [node.output])
            assert _same_values([ex_back.grad_output], [ex.grad_output])
            assert _same_values(ex_back.grad_inputs, ex.grad_inputs)
    # the tanh nodes before the NaN (k <= 6) fail; the NaN ones (from k == 6 on) are skipped
    assert found == 7 and nan > 12
