"""Print pass/fail/skip counts per test file from a JUnit XML written by pytest.

Used by ``tools/array_api_tests.sh``; run directly as ``python tools/array_api_summary.py X.xml``.
"""

from __future__ import annotations

import collections
import sys
import xml.etree.ElementTree as ET

_KINDS = ("passed", "failed", "error", "skipped")


def _outcome(case: ET.Element) -> str:
    for child in case:
        if child.tag in ("failure", "error", "skipped"):
            return {"failure": "failed"}.get(child.tag, child.tag)
    return "passed"


def count_per_file(path: str) -> dict[str, collections.Counter]:
    """Return ``{test file: Counter(outcome)}`` for every test case in the XML at ``path``."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "?").split(".")
        name = next((m for m in module if m.startswith("test_")), module[-1])
        counts[name][_outcome(case)] += 1
    return dict(sorted(counts.items()))


def main(path: str) -> None:
    counts = count_per_file(path)
    total: collections.Counter = collections.Counter()
    print(f"{'file':42} " + " ".join(f"{k:>7}" for k in _KINDS))
    for name, c in counts.items():
        total.update(c)
        print(f"{name:42} " + " ".join(f"{c[k]:7d}" for k in _KINDS))
    print(f"{'TOTAL':42} " + " ".join(f"{total[k]:7d}" for k in _KINDS))


if __name__ == "__main__":
    main(sys.argv[1])
