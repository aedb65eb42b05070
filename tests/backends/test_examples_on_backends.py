"""The examples, unchanged, on every optional backend: they must print what they print on NumPy.

Default: the quick examples on array-api-strict and PyTorch, ``custom_rule`` on Dask too;
``P10_BACKEND_SWEEP=full`` adds the CNN and the transformer. (Training loops on Dask without
``dask_extras.persist`` recompute their whole history each step, so they stay out of the sweep.)
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Callable
from typing import Any

import pytest

import p10
from p10 import Op
from tests.backends.run_on_backend import run
from tests.helpers.backends import FULL, load

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "examples")
DEFAULT = [
    ("custom_rule", "array_api_strict"),
    ("custom_rule", "torch"),
    ("custom_rule", "dask"),
    ("train_mlp", "array_api_strict"),
    ("train_mlp", "torch"),
]
EXTRA = [(ex, b) for ex in ("train_cnn", "tiny_transformer") for b in ("array_api_strict", "torch")]
SELECTED = DEFAULT + (EXTRA if FULL else [])


def _counting(kernel: Callable[..., Any], calls: list[int]) -> Callable[..., Any]:
    def counted(*args: Any, **params: Any) -> Any:
        calls.append(1)
        return kernel(*args, **params)

    return counted


def output_of(example: str, backend: str) -> tuple[str, int]:
    """What ``example --quick`` prints on ``backend`` (timings removed), and how many MUL
    kernels of that backend it ran."""
    script = os.path.join(EXAMPLES, f"{example}.py")
    if not os.path.exists(script):
        pytest.skip(f"examples/{example}.py is not present")
    calls: list[int] = []
    b = p10.get_backend(backend)
    out = io.StringIO()
    with (
        p10.register_kernel(Op.MUL, backend, _counting(b.kernel(Op.MUL), calls)),
        contextlib.redirect_stdout(out),
    ):
        run(backend, script, ["--quick"])
    return re.sub(r"wall time [0-9.]+ ?s", "", out.getvalue()), len(calls)


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def assert_same_printout(got: str, want: str, rtol: float = 1e-4, atol: float = 1e-8) -> None:
    """The same words, and numbers equal within tolerances: BLAS kernels of different CPUs
    (and backends) differ in the last bits, so printed floats are never compared as text.
    A finite-difference relative error (roundoff, 1e-11 on one CPU and 9e-11 on another) is
    within ``atol``; a wrong gradient's (1e-1) is not."""
    assert NUMBER.split(got) == NUMBER.split(want), f"{got!r} != {want!r}"
    for a, b in zip(NUMBER.findall(got), NUMBER.findall(want)):
        assert abs(float(a) - float(b)) <= atol + rtol * abs(float(b)), f"{a} != {b} in {got!r}"


def test_printout_comparison_has_tolerance_and_can_fail() -> None:
    assert_same_printout("error 1.06e-11, loss 0.50000", "error 8.90e-11, loss 0.50001")
    for other in ("error 3.28e-01, loss 0.5", "error 1e-11, loss 0.7", "failed 1e-11, loss 0.5"):
        with pytest.raises(AssertionError):
            assert_same_printout(other, "error 1e-11, loss 0.5")


@pytest.mark.parametrize(("example", "name"), SELECTED)
def test_example_prints_the_same_on_backend(example: str, name: str) -> None:
    load(name)
    got, calls = output_of(example, name)
    want, _ = output_of(example, "numpy")
    assert calls > 0, f"{example} ran no kernel of {name}"
    assert_same_printout(got, want)
