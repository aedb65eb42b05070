"""``tp.cuda``: TPX runs on P10 backends, not on CUDA directly, so no CUDA device is visible.

Code written for PyTorch's ``device = "cuda" if torch.cuda.is_available() else "cpu"`` then
picks the CPU. A GPU is reached through a P10 backend (``t.to(backend="torch",
device="cuda")``), see docs/backends.md.

>>> import tpx as tp
>>> tp.cuda.is_available(), tp.cuda.device_count()
(False, 0)
"""

from __future__ import annotations

__all__ = ["device_count", "is_available", "manual_seed", "manual_seed_all"]


def is_available() -> bool:
    """Always False: TPX has no CUDA device of its own."""
    return False


def device_count() -> int:
    """Always 0 (see :func:`is_available`)."""
    return 0


def manual_seed(seed: int) -> None:
    """Does nothing (no CUDA generator); seed the CPU with ``tp.manual_seed``."""


manual_seed_all = manual_seed
