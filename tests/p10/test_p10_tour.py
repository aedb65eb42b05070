"""The P10 tour example runs and shows what it says."""

from __future__ import annotations

import runpy
from pathlib import Path

TOUR = Path(__file__).resolve().parents[2] / "examples" / "p10_tour.py"


def test_tour_runs(capsys):
    runpy.run_path(str(TOUR), run_name="__main__")
    out = capsys.readouterr().out
    assert "int64 tensor + float32 one -> float32" in out
    assert "versions: x 2 row 2 flat 2" in out
    assert "ShapeError (also ValueError): add: inputs (2, 3) float32, (4,) float32" in out
    assert "same seed, same numbers: True" in out
