"""Run a script (an example, a benchmark) unchanged with another default P10 backend.

    python tests/backends/run_on_backend.py torch examples/train_mlp.py --quick
    python tests/backends/run_on_backend.py torch:cuda examples/train_cnn.py

Every tensor the script creates without naming a backend lands on the chosen one.
"""

from __future__ import annotations

import runpy
import sys

import p10


def run(backend: str, script: str, args: list[str]) -> None:
    """Run ``script`` as ``__main__`` with ``args`` and ``backend`` as the default backend."""
    saved = sys.argv
    sys.argv = [script, *args]
    try:
        with p10.use_backend(backend):
            runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = saved


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    run(sys.argv[1], sys.argv[2], sys.argv[3:])
