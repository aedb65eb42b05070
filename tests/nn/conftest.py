"""Shared setup of the tpx.nn tests: the helpers next to this file are importable by name."""

from __future__ import annotations

import os
import sys

# NOTE: tests/ is not a package; make _nn_check importable whatever pytest's import mode is.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
