"""The user's source line recorded on each node (tpx._graph.user_frame looks a line up once per
code object and instruction offset): right on every path, and never taken from a stale entry."""

from __future__ import annotations

import gc
import inspect

import tpx as tp


def test_each_line_of_a_loop_keeps_its_own_line():
    x = tp.ones(3, requires_grad=True)
    first = inspect.currentframe().f_lineno + 3
    nodes = []
    for _ in range(3):
        y = x * 2.0  # first
        z = y.tanh()  # first + 1
        w = tp.exp(z)  # first + 2: the general path (apply_op)
        nodes += [y.grad_fn, z.grad_fn, w.grad_fn]
    assert [n.lineno for n in nodes] == [first, first + 1, first + 2] * 3
    assert all(n.code.co_name == "test_each_line_of_a_loop_keeps_its_own_line" for n in nodes)


def test_recreated_code_objects_get_their_own_lines():
    # NOTE: each exec makes a new code object, often at the address of the one just freed;
    # the line must follow the new code, not an entry cached for an earlier one
    x = tp.ones(2, requires_grad=True)
    for blank in range(40):
        source = "def f(x):\n" + "\n" * blank + "    return x * 3.0\n"
        namespace: dict = {}
        exec(compile(source, "<generated>", "exec"), namespace)
        node = namespace["f"](x).grad_fn
        assert (node.code.co_filename, node.lineno) == ("<generated>", blank + 2)
        del namespace, node
        gc.collect()
