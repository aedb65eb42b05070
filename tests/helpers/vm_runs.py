"""A run folder of six identical scoped blocks (``model.blocks.0`` .. ``model.blocks.5``, each
``(h @ w).tanh()``): the smallest graph whose first screen folds a repeat "x6", shared by the
view-model tests of the server and of regions.

>>> import tempfile
>>> from pathlib import Path
>>> folder = six_blocks_run(Path(tempfile.mkdtemp()) / "blocks")
>>> (folder / "trace.json").is_file()
True
"""

from __future__ import annotations

from pathlib import Path

import tpx as tp
import tpx_inspect


def six_blocks_run(folder: Path, values: str = "none") -> Path:
    """Write the six-block run's ``trace.json`` into ``folder`` (made); the folder."""
    tp.manual_seed(0)
    x = tp.randn((2, 4), requires_grad=True)
    ws = [tp.randn((4, 4), requires_grad=True) for _ in range(6)]
    with tpx_inspect.capture(values=values) as cap:
        h = x
        for b, w in enumerate(ws):
            with tp.scope(f"model.blocks.{b}"):
                h = (h @ w).tanh()
        h.sum().backward()
    folder.mkdir(parents=True)
    cap.save(str(folder / "trace.json"))
    return folder
