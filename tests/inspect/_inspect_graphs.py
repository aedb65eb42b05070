"""Small graphs for the tpx_inspect tests. Golden files record source lines of this file:
append new helpers at the end so the lines of the existing ones stay put."""

from __future__ import annotations

import os

import numpy as np

import tpx as tp
import tpx_inspect

HERE = os.path.dirname(os.path.abspath(__file__))


def small_capture(**options):
    """A two-layer graph with a parameter, a diamond (h + h), scopes and a getitem."""
    w = tp.asarray(np.arange(6, dtype=np.float32).reshape(3, 2) / 4, requires_grad=True)
    x = tp.asarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    opts = {"timing": False, "source_root": HERE, "params": {"w": w}, **options}
    with tpx_inspect.capture("all", **opts) as cap:
        with tp.scope("enc"), tp.scope("proj"):
            h = (x @ w).tanh()
        with tp.scope("enc"):
            b = h + h
        loss = b[1:, :].sum()
        loss.backward()
    return cap


def chain_capture(n: int, **options):
    """A chain of n multiplications (n + 2 nodes)."""
    with tpx_inspect.capture("all", values="none", timing=False, **options) as cap:
        x = tp.ones(4, requires_grad=True)
        y = x
        for _ in range(n):
            y = y * 1.0
        y.sum().backward()
    return cap
