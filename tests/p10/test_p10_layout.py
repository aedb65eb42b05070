"""P10's source stays readable: no import cycle (function-level imports included) and no file
over 400 lines but the op-spec table (issue 12)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.load import load_tool

ROOT = Path(__file__).resolve().parents[2]


def _import_cycles():
    return load_tool("import_cycles")


def test_p10_has_no_import_cycle() -> None:
    assert _import_cycles().cycles("p10", function_level=True) == []


def test_no_p10_file_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / "p10").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 400 and p.name != "_opspec.py"
    }
    assert long == {}
