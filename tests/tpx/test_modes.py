"""Grad modes (context managers, decorators, thread-local), scopes and source lines."""

from __future__ import annotations

import sys
import threading

import pytest

import tpx as tp


def test_no_grad_context_and_restore():
    x = tp.ones(2, requires_grad=True)
    with tp.no_grad():
        y = x * 2
        assert not tp.is_grad_enabled()
    assert tp.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None


def test_no_grad_restores_after_exception():
    with pytest.raises(ValueError), tp.no_grad():
        raise ValueError
    assert tp.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = tp.ones(2, requires_grad=True)
    with tp.no_grad():
        with tp.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad


def test_modes_as_decorators():
    x = tp.ones(2, requires_grad=True)

    @tp.no_grad()
    def f(t):
        return t * 2

    @tp.enable_grad()
    def g(t):
        return t * 2

    @tp.set_grad_enabled(False)
    def h(t):
        return t * 2

    assert tp.is_grad_enabled()  # defining h did not switch the mode
    assert not f(x).requires_grad and not h(x).requires_grad
    with tp.no_grad():
        assert g(x).requires_grad
    assert f.__name__ == "f"


def test_set_grad_enabled_as_call_and_context():
    x = tp.ones(2, requires_grad=True)
    tp.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        tp.set_grad_enabled(True)
    with tp.set_grad_enabled(False):
        assert not tp.is_grad_enabled()
    assert tp.is_grad_enabled()


def test_no_grad_reentrant_instance():
    ctx = tp.no_grad()
    with ctx:
        with ctx:
            assert not tp.is_grad_enabled()
        assert not tp.is_grad_enabled()
    assert tp.is_grad_enabled()


def test_grad_mode_is_thread_local():
    x = tp.ones(2, requires_grad=True)
    inside = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        with tp.no_grad():
            inside.set()
            release.wait(10)
            seen["worker"] = (x * 2).requires_grad

    t = threading.Thread(target=worker)
    t.start()
    assert inside.wait(10)
    seen["main"] = (x * 2).requires_grad  # the worker's no_grad does not reach this thread
    release.set()
    t.join()
    assert seen == {"main": True, "worker": False}


def test_new_thread_starts_with_grad_enabled():
    seen = []
    with tp.no_grad():
        t = threading.Thread(target=lambda: seen.append(tp.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_scopes_nest_with_dots_and_restore():
    x = tp.ones(2, requires_grad=True)
    with tp.scope("encoder"):
        a = x * 2
        with tp.scope("layer0"):
            b = a + 1
            assert tp.current_scope() == "encoder.layer0"
        c = b * 3
    d = c.sum()
    assert [a.grad_fn.scope, b.grad_fn.scope, c.grad_fn.scope, d.grad_fn.scope] == [
        "encoder",
        "encoder.layer0",
        "encoder",
        "",
    ]


def test_scope_rejects_empty_name():
    with pytest.raises(ValueError, match="non-empty"), tp.scope(""):
        pass


def test_source_line_is_the_users_line():
    x = tp.ones(2, requires_grad=True)
    y = (x * 2).exp()
    line = sys._getframe().f_lineno - 1
    for node in (y.grad_fn, y.grad_fn.next_functions[0][0]):
        assert node.lineno == line
        assert node.code.co_filename == __file__
        assert node.source == f"{__file__}:{line} in test_source_line_is_the_users_line"


def test_source_line_through_method_and_function_forms():
    x = tp.ones((2, 2), requires_grad=True)
    y = tp.matmul(x, x).relu().sum(axis=0)
    line = sys._getframe().f_lineno - 1
    assert [n.lineno for n in tp.reachable([y.grad_fn]) if n.op is not None] == [line] * 3
