"""Small user scripts the tests record with ``tpx-inspect run``, and the one way to write them.

>>> import tempfile
>>> path = write_script(tempfile.mkdtemp(), "hidden.py", HIDDEN_FUNCTION)
>>> path.name, "class Hidden(tp.Function)" in path.read_text()
('hidden.py', True)
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import tpx as tp

HIDDEN_FUNCTION = """
import tpx as tp

def make():
    class Hidden(tp.Function):  # defined inside a function: never importable offline
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2.0 * x

    return Hidden

x = tp.asarray([0.5, -1.5, 2.0], dtype="float64", requires_grad=True)
(make().apply(x).sin()).sum().backward()
"""
"""A script whose custom ``tp.Function`` cannot be imported later: the checks skip its node."""


def write_script(folder: str | Path, name: str, text: str) -> Path:
    """Write ``text`` (dedented) as ``folder/name`` and return the path."""
    path = Path(folder) / name
    path.write_text(textwrap.dedent(text))
    return path


class Square(tp.Function):
    """``x * x`` with its rule ``2 x g``: :data:`HIDDEN_FUNCTION`'s Function, importable."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x


def train_mlp_steps(steps: int) -> None:
    """``steps`` Adam steps of examples/train_mlp.py's model on its batches (no schedule, no
    evaluation): the MLP example as the capture tests record it."""
    import tpx.nn.functional as F
    import tpx.optim as optim
    from tests.helpers.load import load_example

    mlp = load_example("train_mlp")
    model = mlp.build_model()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    data = mlp.batches()
    for _ in range(steps):
        x, y = next(data)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
