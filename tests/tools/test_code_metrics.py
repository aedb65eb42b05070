"""tools/code_metrics.py, the figures of issue 12's closing note: on the real tree they agree with
the tools and tests they come from, and on a planted tree they report what was planted."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

from tests.helpers.load import load_tool
from tests.tpx.test_adding_an_op import _blocks

metrics = load_tool("code_metrics")
ROOT = Path(__file__).resolve().parents[2]


def test_on_the_real_tree_the_figures_agree_with_their_sources(capsys) -> None:
    n, steps = metrics.function_lines(ROOT / "tpx" / "_engine.py", "_run")
    assert 5 < n < 60 and steps  # the one loop, in one screen, with its named steps
    assert metrics.op_walk(ROOT) == [(f, w) for f, w, _ in _blocks()]
    for path, lines in metrics.long_files(ROOT).items():
        assert lines == len((ROOT / path).read_text().splitlines()) > 400
    assert "tpx/rules.py" in metrics.long_files(ROOT, allowed=())  # the rule table, let through
    assert metrics.main([]) == 0
    out = capsys.readouterr().out
    assert "backward loop tpx/_engine.py:_run: " in out
    for package in metrics.PACKAGES:  # the counts: tools/import_cycles.py's (planted case below)
        assert re.search(rf"^  {package}: \d+ / \d+$", out, re.M)
    assert "  kernel: tpx_inspect/checks/kernels.py" in out  # found through the registry
    assert "tpx_inspect/schema/trace.schema.json" in out  # names every node column


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_reports_a_planted_long_file_cycle_loop_and_walk(tmp_path: Path, capsys) -> None:
    loop = "def _run(order):\n    for n in order:\n        _step(n)\n\n\ndef _step(n):\n    pass\n"
    doc = "```python file=p10/_opspec.py at=end-of:SPECS\nx\n```\n"
    _plant(tmp_path, {
        "p10/__init__.py": "from p10 import a\n",
        "p10/a.py": "def f():\n    from p10 import b\n",
        "p10/b.py": "from p10 import a\n" + "x = 1\n" * 400,
        "p10/_opspec.py": "x = 1\n" * 900,  # the op-spec table may be longer
        "tpx/_engine.py": loop,
        "docs/adding-an-op.md": doc,
    })  # fmt: skip
    assert metrics.long_files(tmp_path) == {"p10/b.py": 401}
    assert metrics.cycle_counts(tmp_path, ["p10"]) == {"p10": (0, 1)}
    assert metrics.function_lines(tmp_path / "tpx" / "_engine.py", "_run") == (3, {"_step": 2})
    metrics.main(["--root", str(tmp_path), "--no-registries"])
    out = capsys.readouterr().out.splitlines()
    assert "  p10/b.py: 401" in out and "  p10: 0 / 1" in out
    assert "backward loop tpx/_engine.py:_run: 3 lines; with the 1 functions of its module it " \
        "calls (directly or not): 5 lines" in out  # fmt: skip
    assert any(line.startswith("adding an op ") and "1 files, 1 places" in line for line in out)


def test_a_hand_kept_list_of_registered_names_is_found(tmp_path: Path) -> None:
    _plant(tmp_path, {
        "tpx_inspect/cli.py": 'CHOICES = ["local", "order"]\n',
        "docs/checks.md": "`local` is one check\n",
        "tests/test_x.py": "names = ('local',\n         'order')\n",
    })  # fmt: skip
    found = metrics.named_everywhere(tmp_path, ["local", "order"])
    assert found == {"tests/test_x.py": 2, "tpx_inspect/cli.py": 1}
    assert metrics.named_everywhere(tmp_path, ["local", "order"], {"tests/test_x.py"}) == {
        "tpx_inspect/cli.py": 1
    }


def test_the_tools_doctests_pass() -> None:
    # NOTE: tools/ is not among pytest's doctest paths (testpaths), so its examples run here
    for name in ("code_metrics", "typing_stubs"):
        result = doctest.testmod(load_tool(name))
        assert result.attempted > 0 and result.failed == 0, name
