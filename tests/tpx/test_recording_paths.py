"""The operator shortcuts and ``apply_op`` (both through ``tpx._recording.record``, with their
own arguments) record the same node, field by field, and check version counters the same way
(issue 12)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import p10
import tpx as tp

CASES = [
    ("x * w", lambda x, w: x * w, lambda x, w: p10.multiply(x, w)),
    ("x * c", lambda x, w: x * c, lambda x, w: p10.multiply(x, c)),
    ("c * x", lambda x, w: c * x, lambda x, w: p10.multiply(c, x)),
    ("2.0 - x", lambda x, w: 2.0 - x, lambda x, w: p10.subtract(2.0, x)),
    ("x / 3", lambda x, w: x / 3, lambda x, w: p10.divide(x, 3)),
    ("x @ w.T", lambda x, w: x @ w.T, lambda x, w: p10.matmul(x, w.T)),
    ("x.tanh()", lambda x, w: x.tanh(), lambda x, w: p10.tanh(x)),
    ("-x", lambda x, w: -x, lambda x, w: p10.negative(x)),
    ("x.sum(1)", lambda x, w: x.sum(1), lambda x, w: p10.sum(x, axis=1)),
    ("x.mean()", lambda x, w: x.mean(), lambda x, w: p10.mean(x)),
]
c = tp.asarray([[0.5, 2.0, -1.0]])  # a constant (no grad) tensor


def _saved_pattern(node):
    return None if node.saved is None else tuple(v is not None for v in node.saved)


def _fields(node):
    return (
        node.op,
        node.params,
        node.rule,
        node.vjp,
        node.needs_input_grad,
        node.in_meta,
        node.out_meta,
        _saved_pattern(node),
        node.versions,
        tuple(e is not None for e in node.edges),
        node.code.co_name,
    )


@pytest.mark.parametrize("w_grad", [False, True], ids=["w-const", "w-grad"])
@pytest.mark.parametrize(("name", "fast", "general"), CASES, ids=[n for n, _, _ in CASES])
def test_shortcut_and_general_path_record_the_same_node(name, fast, general, w_grad):
    rng = np.random.default_rng(0)
    x = tp.asarray(rng.standard_normal((2, 3)), requires_grad=True)
    w = tp.asarray(rng.standard_normal((2, 3)), requires_grad=w_grad)
    a, b = fast(x, w), general(x, w)
    assert a.grad_fn is not None and b.grad_fn is not None
    assert _fields(a.grad_fn) == _fields(b.grad_fn)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    ga = tp.grad(a.sum(), [x, w] if w_grad else [x], allow_unused=True)
    gb = tp.grad(b.sum(), [x, w] if w_grad else [x], allow_unused=True)
    for u, v in zip(ga, gb):
        assert (u is None) == (v is None)
        if u is not None:
            np.testing.assert_array_equal(u.numpy(), v.numpy())


def test_values_with_version_counters_are_checked_and_recorded():
    x = tp.ones((2, 2), requires_grad=True)
    with tp.no_grad():
        x.mul_(1.0)  # the leaf's value now has a version counter, at 1
    y = x.reshape(4)  # a view (apply_op): its value shares that counter
    z = y * y  # the shortcut: y has a counter, so its edge is checked
    assert z.grad_fn.versions == (1, 1, 0)
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 2.0))
    with tp.no_grad():
        x.mul_(1.0)  # y's value changes under it
    for use in (lambda: y * 2.0, lambda: p10.multiply(y, 2.0)):
        with pytest.raises(tp.InplaceError, match="modified in place"):
            use()


def test_scope_and_override_are_read_while_on_in_any_thread():
    """``record`` reads a thread's scope and overrides only while ``_mode.local_settings`` counts
    one on somewhere: the count comes back to its start, and a scope or an override opened in
    another thread is not seen here while this thread's own are."""
    from p10 import Op
    from tpx import _mode
    from tpx.rules import RULES

    start = _mode.local_settings
    x = tp.ones(2, requires_grad=True)
    inside = []
    with _on_in_another_thread(lambda: tp.scope("other")):
        assert _mode.local_settings == start + 1
        inside.append((x * 2).grad_fn)  # this thread has no scope: none recorded
        with tp.scope("mine"), tp.override_rule(Op.TANH, RULES[Op.TANH].vjp):
            assert _mode.local_settings == start + 3
            inside.append(x.tanh().grad_fn)
    assert _mode.local_settings == start
    assert inside[0].scope == "" and inside[0].overrides is None
    assert inside[1].scope == "mine" and inside[1].overrides is not None
    assert (x * 2).grad_fn.scope == ""


def test_anomaly_mode_is_read_while_on_in_any_thread():
    """The shortcuts and ``apply_op`` read a thread's anomaly mode only while
    ``_mode.anomalous`` counts a thread with a check on: the count comes back to its start,
    anomaly mode in another thread is not seen here, and this thread's own is."""
    from tpx import _mode

    start = _mode.anomalous
    x = tp.ones(2, requires_grad=True)
    zero = tp.zeros(2, requires_grad=True)
    with _on_in_another_thread(tp.detect_anomaly):
        assert _mode.anomalous == start + 1
        assert (x * 2).grad_fn.checksums is None  # no saved-value checks in this thread
        assert np.isinf(zero.log().sum().item())  # nor NaN/Inf checks
        with tp.set_saved_tensor_checks(True):
            assert _mode.anomalous == start + 2
            assert (x * x).grad_fn.checksums is not None
        assert _mode.anomalous == start + 1
        with tp.detect_anomaly(), pytest.raises(tp.AnomalyError):
            zero.log()
        with tp.detect_anomaly(), pytest.raises(tp.AnomalyError):
            zero / zero  # a shortcut
    assert _mode.anomalous == start
    with tp.set_saved_tensor_checks(True):
        assert _mode.anomalous == start + 1
    assert _mode.anomalous == start


@contextlib.contextmanager
def _on_in_another_thread(make: Callable[[], Any]) -> Iterator[None]:
    """Hold the context manager ``make()`` open in another thread while the block runs."""
    opened, done = threading.Event(), threading.Event()

    def hold() -> None:
        with make():
            opened.set()
            done.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert opened.wait(10)
        yield
    finally:
        done.set()
        t.join()
