"""The JSON form of an A/B report (``tpx-inspect ab --json``): plain data, floats that are
NaN or infinite written as the strings ``"nan"``, ``"inf"``, ``"-inf"``."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from tpx_inspect._ab_compare import Diff, NodeAB, StepAB


def num(v: float | None) -> float | str | None:
    """A float as JSON allows it.

    >>> num(1.5), num(float("nan")), num(float("-inf")), num(None)
    (1.5, 'nan', '-inf', None)
    """
    if v is None or math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _diff(d: Diff | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"abs": num(d.abs), "rel": num(d.rel), "exact": d.exact}


def node_json(n: NodeAB) -> dict[str, Any]:
    """One node's comparison."""
    return {
        "id": n.id, "id_b": n.id_b, "op": n.op, "title": n.title, "scope": n.scope,
        "source": n.source, "output": _diff(n.output), "grad": _diff(n.grad),
        "grads_out": _diff(n.grads_out), "saved_bytes_a": n.saved_bytes_a,
        "saved_bytes_b": n.saved_bytes_b, "backward_seconds_a": num(n.backward_seconds_a),
        "backward_seconds_b": num(n.backward_seconds_b), "overrides_b": n.overrides_b,
    }  # fmt: skip


def step_json(s: StepAB) -> dict[str, Any]:
    """One step's comparison (nodes in A's id order)."""
    return {
        "step": s.step, "graph_a": s.graph_a, "graph_b": s.graph_b,
        "peak_saved_bytes_a": s.peak_saved_bytes_a, "peak_saved_bytes_b": s.peak_saved_bytes_b,
        "backward_seconds_a": num(s.backward_seconds_a),
        "backward_seconds_b": num(s.backward_seconds_b), "unmatched": list(s.unmatched),
        "backward_order": list(s.order), "nodes": [node_json(n) for n in s.nodes],
    }  # fmt: skip


def report_json(r: Any) -> dict[str, Any]:
    """An :class:`~tpx_inspect.ab.ABReport` as JSON-ready data."""
    first = None
    if r.first is not None:
        first = {k: num(v) if isinstance(v, float) else v for k, v in asdict(r.first).items()}
        first["text"] = r.first.describe()
    return {
        "verdict": "diverges" if r.diverged else "matches",
        "exit_code": r.exit_code,
        "overrides": [o.to_json() for o in r.overrides],
        "overrides_a": [o.to_json() for o in r.overrides_a],
        "tolerance": {"rtol": r.tolerance.rtol, "atol": r.tolerance.atol},
        "first_divergence": first,
        "losses": {"a": [num(v) for v in r.losses_a], "b": [num(v) for v in r.losses_b]},
        "error_b": r.error_b,
        "steps": [step_json(s) for s in r.steps],
    }
