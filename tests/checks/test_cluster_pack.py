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
from tpx_inspect.checks._packing import Rows, pack, unpack
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
        [(items, columns)] = unpack(pack([group]))
        alone = check_group(group, opts)
        assert check_group(items, opts, columns) == alone
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


def test_a_packed_task_round_trips_every_field_and_ships_each_array_once():
    graph = _graph()
    _, groups = plan(graph, backward_order(graph), LocalOptions())
    p = pack(groups)  # every group in one task: values shared between groups are pooled once
    distinct = {id(v): v for group in groups for v in _values(group) if isinstance(v, np.ndarray)}
    assert sum(len(pool) for pool in p["pools"]) == len(distinct) < sum(map(_count, groups))
    unpacked = unpack(p)
    assert len(unpacked) == len(groups)
    for group, (items, (inputs, output, grad_output, _)) in zip(groups, unpacked):
        assert len(items) == len(group)
        for b, ((node, ex), (back, ex_back)) in enumerate(zip(group, items, strict=True)):
            assert _fields(back) == {**_fields(node), "rule": back.rule}
            assert _same_values(back.inputs, node.inputs)
            assert _same_values([back.output], [node.output])
            assert (ex is None) == (ex_back is None)
            if ex is not None:
                assert ex_back.node == ex.node == node.id
                assert _same_values([ex_back.grad_output], [ex.grad_output])
                assert _same_values(ex_back.grad_inputs, ex.grad_inputs)
                assert _same(_row(grad_output, b), ex.grad_output)
            assert _same(_row(output, b), node.output)
            for x, v, a in zip(inputs, node.inputs, _input_is_array(node)):
                assert _same(_row(x, b), v) if a else x is v


def test_a_column_of_mixed_layouts_ships_as_a_list():
    a, b = np.zeros(3), np.ones(4)
    p = pack([[(_Fake(0, (a,), a), None), (_Fake(1, (b,), b), None)]])
    group = p["groups"][0]
    assert type(group["output"]) is list and type(group["inputs"][0]) is list
    [(items, (_, output, _, _))] = unpack(p)
    assert _same(items[1][0].output, b) and _same(items[1][0].inputs[0], b)
    assert type(output) is list and _same(output[0], a)


def test_a_pool_of_mixed_layouts_is_not_stacked():
    x, y = np.arange(3.0), np.arange(3, dtype=np.float32)
    z = np.arange(6.0).reshape(3, 2)
    p = pack([[(_Fake(0, (x, x, z), y), None), (_Fake(1, (y, x, z.T), x), None)]])
    g = p["groups"][0]
    # input 0 and the output are x and y (one dtype per column, not per value): lists; so is
    # input 1, pooled with them; input 2 (two shapes of one size) too, never reshaped
    assert [type(c) for c in (*g["inputs"], g["output"])] == [list] * 4
    assert p["pools"] == []
    [(items, _)] = unpack(p)
    assert _same_values(items[1][0].inputs, (y, x, z.T)) and _same(items[1][0].output, x)


def test_a_pool_is_stacked_only_from_arrays_of_its_exact_shape():
    a, b, c = np.zeros((3, 2)), np.ones((3, 4)), np.ones((1, 6))
    for other in (b, c, np.ones((3, 2, 1)), np.ones((3, 2), dtype=np.float32)):
        p = pack([[(_Fake(0, (a,), a), None), (_Fake(1, (other,), a), None)]])
        g = p["groups"][0]
        assert type(g["inputs"][0]) is list and type(g["output"]) is list
        [(items, _)] = unpack(p)
        assert _same(items[1][0].inputs[0], other)


def test_an_array_shared_by_columns_is_shipped_once():
    x, y = np.arange(3.0), np.arange(3.0) + 1
    p = pack([[(_Fake(0, (x, y), x), None), (_Fake(1, (y, x), y), None)]])
    g = p["groups"][0]
    assert [type(c) for c in (*g["inputs"], g["output"])] == [Rows] * 3
    [pool] = p["pools"]
    assert pool.shape == (2, 3)
    rows = [c.rows.tolist() for c in (*g["inputs"], g["output"])]
    assert rows[0] == rows[2] == rows[1][::-1] and sorted(rows[0]) == [0, 1]
    [(items, _)] = unpack(p)
    assert _same_values(items[1][0].inputs, (y, x)) and _same(items[0][0].output, x)


def _row(column, b):
    return column[b] if isinstance(column, list) else column[b, ...]


def _input_is_array(node):
    return [isinstance(x, np.ndarray) for x in node.inputs]


def _values(group):
    for node, ex in group:
        yield from (*node.inputs, node.output)
        if ex is not None:
            yield from (ex.grad_output, *ex.grad_inputs)


def _count(group):
    return sum(isinstance(v, np.ndarray) for v in _values(group))


def _Fake(nid, inputs, output):
    from tpx_inspect.check_view import NodeRecord

    return NodeRecord(nid, "SinBackward", Op.SIN, {}, (), inputs, output)
