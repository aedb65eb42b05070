"""Checks that name the one GradFn, accumulation or kernel that is wrong.

- Whole function: :func:`gradcheck` / :func:`gradgradcheck` (float64 central differences,
  full-Jacobian or fast random-projection mode, messages naming output, input and element).
- Per recorded graph (a captured ``tpx_inspect.records.Graph``: :func:`record` live, or
  :func:`with_functions` of a saved trace's graph): the local
  check of every node's rule (``local``), ``accumulation``, ``kernel`` (against the numpy
  spec), ``order`` and ``nonfinite``; on a function also ``tracing`` (grad mode on vs off).
- Registry: every check registers itself with :func:`register_check` in its own module; the
  runner, the CLI's ``--only``, the server's enum, :data:`CATEGORIES` and the table in
  docs/checks.md derive from :func:`check_names` / :func:`categories`.
- Drivers: :func:`run_all_checks`, :func:`run_graph_checks`, :func:`run_script_checks`,
  :func:`run_trace_checks`, :func:`load_target`; results are a :class:`Report` (``to_json``,
  ``render``, ``status`` PASS/FAIL/SKIPPED/PARTIAL, ``exit_code`` 1 when one fails).

>>> import tpx as tp
>>> from tpx_inspect.checks import run_all_checks
>>> x = tp.asarray([0.5, 1.5], requires_grad=True)
>>> run_all_checks(lambda t: (t.sin() * t).sum(), [x]).exit_code
0
"""

from tpx_inspect.check_view import NodeRecord
from tpx_inspect.checks.accumulation import accumulation_check
from tpx_inspect.checks.gradcheck import (
    GradcheckError,
    GradcheckResult,
    Mismatch,
    gradcheck,
    gradgradcheck,
)
from tpx_inspect.checks.kernels import kernel_check
from tpx_inspect.checks.local import LocalOptions, local_check
from tpx_inspect.checks.nonfinite import nonfinite_check
from tpx_inspect.checks.offline import with_functions
from tpx_inspect.checks.order import order_check
from tpx_inspect.checks.record import Recording, record
from tpx_inspect.checks.registry import categories, check_names, register_check
from tpx_inspect.checks.report import (
    STATUSES,
    CheckResult,
    Finding,
    Report,
    Skip,
    Status,
)
from tpx_inspect.checks.runner import (
    FUNCTION_CHECKS,
    GRAPH_CHECKS,
    capture_call,
    run_all_checks,
    run_graph_checks,
    run_script_checks,
    run_trace_checks,
)
from tpx_inspect.checks.targets import TargetError, load_target
from tpx_inspect.checks.tracing import tracing_check

CATEGORIES = categories()
"""Every category a finding can have, one per kind of bug the checks name (from the registry)."""

__all__ = [
    "CATEGORIES",
    "FUNCTION_CHECKS",
    "GRAPH_CHECKS",
    "STATUSES",
    "CheckResult",
    "Finding",
    "GradcheckError",
    "GradcheckResult",
    "LocalOptions",
    "Mismatch",
    "NodeRecord",
    "Recording",
    "Report",
    "Skip",
    "Status",
    "TargetError",
    "accumulation_check",
    "capture_call",
    "categories",
    "check_names",
    "gradcheck",
    "gradgradcheck",
    "kernel_check",
    "load_target",
    "local_check",
    "nonfinite_check",
    "order_check",
    "record",
    "register_check",
    "run_all_checks",
    "run_graph_checks",
    "run_script_checks",
    "run_trace_checks",
    "tracing_check",
    "with_functions",
]  # fmt: skip
