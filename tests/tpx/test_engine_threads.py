"""The engine under threads: many backward passes into one shared leaf lose no update."""

from __future__ import annotations

import sys
import threading

import numpy as np

import tpx as tp

ROUNDS = 10


def _contribute(x: tp.Tensor, k: int) -> None:
    # two uses of x: its AccumulateGrad sums two contributions, then the leaf's .grad one more
    ((x * float(k)).sum() + (x * 1.0).sum()).backward()


def _run_threads(x: tp.Tensor, n: int) -> None:
    start = threading.Barrier(n)

    def work(k: int) -> None:
        start.wait()
        for _ in range(ROUNDS):
            _contribute(x, k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_100_threads_accumulate_into_one_leaf_as_a_serial_run():
    n = 100
    serial = tp.zeros(4096, dtype=tp.float64, requires_grad=True)
    for k in range(n):
        for _ in range(ROUNDS):
            _contribute(serial, k)
    x = tp.zeros(4096, dtype=tp.float64, requires_grad=True)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # a thread switch between any two bytecodes, almost
    try:
        _run_threads(x, n)
    finally:
        sys.setswitchinterval(previous)
    expected = np.full(4096, ROUNDS * (n * (n - 1) / 2 + n))
    # NOTE: every contribution is a small integer, so any summation order is exact
    np.testing.assert_array_equal(serial.grad.numpy(), expected)
    np.testing.assert_array_equal(x.grad.numpy(), expected)
