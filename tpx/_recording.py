"""Recording: every P10 function dispatches to :func:`apply_op` when one of its inputs is a
``tpx.Tensor`` (P10's ``__p10_apply__`` protocol). The op runs on P10; a GradFn node is recorded
only when an input requires grad and grad mode is on.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import p10
from p10._tensor import execute
from tpx import _graph, _mode, _observers
from tpx._errors import AnomalyError, InplaceError, MissingRuleError
from tpx._graph import GradFn, needs_of, shared, shared_meta, user_frame
from tpx._mode import NAN_CHECKS, SAVED_CHECKS, state
from tpx._saved_checks import record_checksums
from tpx._tensor import Tensor, wrap
from tpx.rules import NON_DIFFERENTIABLE, RULES

_new = object.__new__


def apply_op(op: Any, inputs: tuple, params: dict) -> Any:
    """Run ``op`` on P10 and, when an input requires grad in grad mode, record a GradFn."""
    raw = []
    needs = False
    for x in inputs:
        if x.__class__ is Tensor:
            raw.append(x._value)
            if x._requires_grad:
                needs = True
        else:
            raw.append(x)
    start = time.perf_counter() if _observers.observers else 0.0
    out = execute(op, raw, params)
    anomaly = state.anomaly if _mode.anomalous else 0  # see _mode.anomalous
    if needs and state.grad_enabled:
        # NOTE: skip=2: __p10_apply__ is this function's only caller, so the user's frame lies
        # past it (at p10.apply's caller, or at __p10_apply__'s caller when called directly)
        return record(op, inputs, raw, params, out, start, 2, anomaly)
    result = wrap(out)
    if anomaly & NAN_CHECKS:
        _check_finite(op, None, out)
    return result


def _edge(x: Any) -> Any:
    if x.__class__ is not Tensor or not x._requires_grad:
        return None
    fn = x.grad_fn
    if fn is None:
        acc = x._accumulator_ref  # the leaf's AccumulateGrad, held weakly (see Tensor._accumulator)
        fn = acc() if acc is not None else None
        return x._accumulator() if fn is None else fn
    vc = x._value._vc  # NOTE: the counter itself, not the version property (one call less)
    if x._recorded_version != (0 if vc is None else vc[0]):
        raise InplaceError(
            f"a tensor of shape {x.shape} (output of {fn.name} at {fn.source}) was modified "
            "in place through another view after it was computed, so its graph no longer "
            "describes its value; clone() it before writing into it"
        )
    return fn


def record(
    op: Any,
    inputs: tuple,
    raw: tuple | list,
    params: dict,
    out: p10.Tensor,
    start: float = 0.0,
    skip: int = 1,
    anomaly: int = 0,
) -> Any:
    """Record the node of ``op`` run on ``raw`` (the P10 values of ``inputs``, TPX tensors or
    P10 values) and return the output tensor. ``skip``: the TPX frames between the caller and
    the user's code (see :func:`~tpx._graph.user_frame`); ``anomaly``: the caller's
    ``state.anomaly`` (the shortcuts leave anomaly mode to ``apply_op``, so they pass 0: a
    read of the thread-local ``state`` costs ~1,000 instructions, 2% of a recorded op).

    The one recording path of the operator shortcuts and :func:`apply_op`. One and two inputs
    are written out (a loop over them, or a call per input, costs 4-9% of a recorded op); the
    rest, and everything rare (no rule, a leaf's first use, a tensor written in place, 3+
    inputs, saved values' versions, anomaly mode, observers), are calls taken only when a flag
    read here says so; scopes and overrides are read only while one is on somewhere.
    """
    rule = RULES.get(op)
    overrides, scope = None, ""
    if _mode.local_settings:  # a scope or an override is on in some thread (see _mode)
        overrides, scope = state.overrides, state.scope
        if overrides is not None:
            rule = overrides.rule(op, rule)
    if rule is None:
        return _unruled(op, out)
    # NOTE: the edges first: a leaf's AccumulateGrad made here must get a smaller sequence
    # number than this node (the engine runs nodes by decreasing number)
    od = out._data
    n = len(raw)
    if n == 2:
        x, y = inputs
        e0 = e1 = None
        if x.__class__ is Tensor and x._requires_grad:
            e0 = x.grad_fn  # NOTE: _edge's common case inline (a node never written in place)
            if e0 is None or x._recorded_version or x._value._vc is not None:
                e0 = _edge(x)
        if y.__class__ is Tensor and y._requires_grad:
            e1 = y.grad_fn
            if e1 is None or y._recorded_version or y._value._vc is not None:
                e1 = _edge(y)
        edges, needs = (e0, e1), _NEEDS_TWO[e0 is not None][e1 is not None]
        a, b = raw
        ad, bd = a._data, b._data
        # NOTE: the backend comes before the backend's dtype objects, so that keys of different
        # backends differ before their dtypes are compared (array-api-strict warns on that)
        key = (op, out._backend, od.shape, od.dtype, ad.shape, ad.dtype, bd.shape, bd.dtype)
    elif n == 1:
        x = inputs[0]  # a TPX tensor that requires grad (else nothing is recorded)
        e0 = x.grad_fn
        if e0 is None or x._recorded_version or x._value._vc is not None:
            e0 = _edge(x)
        edges, needs = (e0,), _NEEDS_ONE
        a, b = raw[0], None
        ad = a._data
        key = (op, out._backend, od.shape, od.dtype, ad.shape, ad.dtype)
    else:
        edges = tuple([_edge(x) for x in inputs])
        needs, key = needs_of(edges), _key(op, raw, out)
    meta = _node_meta.get(key)
    if meta is None:
        meta = _new_meta(key, raw, out)
    in_meta, out_meta, real = meta
    if real is None:  # a non-floating output (see _new_meta)
        return wrap(out)
    node = _new(GradFn)  # NOTE: GradFn.__init__ written out (one call less per recorded op)
    node.seq = next(_graph._seq)
    node.op, node.params, node.rule = op, params, rule
    node.vjp = rule.real_vjp if real else rule.vjp
    node.edges, node.needs_input_grad = edges, needs
    node.in_meta, node.out_meta = in_meta, out_meta
    if rule.saves_any:
        if n > 2 or rule.save_from is not None:
            _save_any(node, rule, raw, out)
        else:  # NOTE: _save_any written out for one or two inputs
            keep, output = rule.save, out if rule.save_output else None
            if b is None:
                node.saved = saved = (a if 0 in keep else None, output)
            elif rule.cross:  # each input only for the other's gradient (see Rule.cross)
                node.saved = saved = (
                    a if e1 is not None else None,
                    b if e0 is not None else None,
                    output,
                )
            else:
                node.saved = saved = (a if 0 in keep else None, b if 1 in keep else None, output)
            if a._vc is None and (b is None or b._vc is None) and out._vc is None:
                node.versions = _ZEROS[n + 1]  # never written in place, not views: all at 0
            else:
                node.versions = _versions(saved)
    if overrides is not None:
        node.overrides = overrides.mark(op, out._backend)
    if scope:  # the class default is ""
        node.scope = scope
    node.code, node.lineno = user_frame(skip)
    t = _new(Tensor)  # wrap() inlined
    t._value, t._requires_grad, t.grad_fn = out, True, node
    # NOTE: a view shares its base's counter, which may be past 0; a fresh output has none
    t._recorded_version = 0 if (vc := out._vc) is None else vc[0]
    t._grad = t._accumulator_ref = t._rare_attrs = None
    if anomaly:
        _anomaly_checks(op, node, t, anomaly)
    if _observers.observers:  # NOTE: the handlers called here (no call per node to reach them)
        seconds = time.perf_counter() - start
        for fn in _observers.on_node_recorded:
            fn(node, t)
        for fn in _observers.on_node_forward:
            fn(node, inputs, t, seconds)
    return t


def _unruled(op: Any, out: p10.Tensor) -> Any:
    """The output of an op without a gradient rule: not recorded, or an error naming it."""
    if op in NON_DIFFERENTIABLE:
        return wrap(out)
    raise MissingRuleError(
        f"{op.value}: no gradient rule for this op; register one with "
        f"tpx.register_rule(op, vjp) or call it under tp.no_grad()"
    )


def _key(op: Any, raw: tuple | list, out: p10.Tensor) -> tuple:
    """The metadata key of a node of any number of inputs (see ``_node_meta``)."""
    od = out._data
    key = [op, out._backend, od.shape, od.dtype]
    for r in raw:
        data = r._data
        key += (data.shape, data.dtype)
    return tuple(key)


def _save_any(node: GradFn, rule: Any, raw: tuple | list, out: p10.Tensor) -> None:
    """Keep on ``node`` the values its rule reads, one per input (None where not read) and then
    the output, with their version counters."""
    # NOTE: P10 values are saved, not TPX tensors (the engine rebuilds those from the edges
    # under create_graph, as PyTorch's SavedVariable does): intermediate tpx.Tensor objects
    # are then freed as soon as the user drops them.
    n = len(raw)
    saved: list[Any] = [None] * n + [out if rule.save_output else None]
    for i in rule.save:
        if i < n:  # a custom op without a declared arity may get fewer inputs
            saved[i] = raw[i]
    if rule.save_from is not None:  # a variadic op (see Rule.save_from)
        for i in range(rule.save_from, n):
            saved[i] = raw[i]
    if rule.cross:  # each input only for the other's gradient (see Rule.cross)
        saved[0] = raw[0] if node.edges[1] is not None else None
        saved[1] = raw[1] if node.edges[0] is not None else None
    node.saved = tuple(saved)
    node.versions = _versions(node.saved)


def _anomaly_checks(op: Any, node: GradFn, t: Tensor, anomaly: int) -> None:
    """Anomaly mode's checks of a node just recorded (before the observers see it)."""
    if anomaly & SAVED_CHECKS and node.saved is not None:
        record_checksums(node)
    if anomaly & NAN_CHECKS:
        _check_finite(op, node, t._value)


_ZEROS = tuple((0,) * n for n in range(8))


def _versions(saved: tuple) -> tuple:
    for v in saved:
        if v is not None and v._vc is not None:  # a view, or written in place before
            return shared(tuple([0 if v is None else v.version for v in saved]))
    # NOTE: the common case: no saved value has a version counter yet, so all are at 0
    n = len(saved)
    return _ZEROS[n] if n < len(_ZEROS) else (0,) * n


def _check_finite(op: Any, node: GradFn | None, out: p10.Tensor) -> None:
    arr = np.asarray(out)
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        kind = "NaN" if np.isnan(arr).any() else "Inf"
        name = node.name if node is not None else "no grad"
        code, line = user_frame()
        where = f"{code.co_filename}:{line}" if code is not None else "<unknown>"
        raise AnomalyError(
            f"anomaly in forward of {op.value} ({name}): the output of shape {arr.shape} "
            f"contains {kind}; produced at {where}"
        )


_NEEDS_ONE = (True,)  # a unary shortcut records only for an input that requires grad
_NEEDS_TWO = (((False, False), (False, True)), ((True, False), (True, True)))

# (op, backend, output shape and dtype, then each input's) -> (in_meta, out_meta, real): the
# metadata of a recorded node, shared by every node with the same key (see tpx._graph.shared),
# and whether all its values are real (the node then runs Rule.real_vjp; None: the output is
# not floating, nothing is recorded). The dtypes in the key are the backend arrays' own; the
# metadata holds P10's.
_node_meta: dict[tuple, tuple] = {}


def _new_meta(key: tuple, raw: tuple | list, out: p10.Tensor) -> tuple:
    """The metadata of ``key`` (not cached yet): computed from the values, then cached."""
    in_meta = shared_meta(tuple([(r._data.shape, r.dtype) for r in raw]))
    real = all(dtype.kind != "c" for _, dtype in in_meta) and out.dtype.kind != "c"
    if out.dtype.kind not in "fc":
        real = None  # NOTE: a non-floating output is not recorded (see record)
    meta = (in_meta, shared((out._data.shape, out.dtype)), real)
    if len(_node_meta) >= 4096:
        _node_meta.clear()  # bounded, as tpx._graph.shared
    _node_meta[key] = meta
    return meta


def _install() -> None:
    # NOTE: set here, not in the class body: this module imports tpx._tensor
    Tensor.__p10_apply__ = staticmethod(apply_op)


_install()
