"""Recording: every P10 function dispatches to :func:`apply_op` when one of its inputs is a
``tpx.Tensor`` (P10's ``__p10_apply__`` protocol). The op runs on P10; a GradFn node is recorded
only when an input requires grad and grad mode is on.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import p10
from p10 import Op
from p10._tensor import execute
from tpx import _graph, _mode
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
    start = time.perf_counter() if _mode.observers else 0.0
    out = execute(op, raw, params)
    if needs and state.grad_enabled:
        # NOTE: skip=2: __p10_apply__ is this function's only caller, so the user's frame lies
        # past it (at p10.apply's caller, or at __p10_apply__'s caller when called directly)
        return _record(op, inputs, raw, params, out, start, skip=2)
    result = wrap(out)
    if state.anomaly & NAN_CHECKS:
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
    if x._recorded_version != x._value.version:
        raise InplaceError(
            f"a tensor of shape {x.shape} (output of {fn.name} at {fn.source}) was modified "
            "in place through another view after it was computed, so its graph no longer "
            "describes its value; clone() it before writing into it"
        )
    return fn


def _record(
    op: Any,
    inputs: tuple,
    raw: list | tuple,
    params: dict,
    out: p10.Tensor,
    start: float = 0.0,
    skip: int = 0,
) -> Any:
    """Record the node of ``op`` (called with ``skip`` TPX frames between the caller and the
    user's code, see :func:`~tpx._graph.user_frame`) and return the output tensor."""
    rule = RULES.get(op)
    overrides = state.overrides
    if overrides is not None:
        rule = overrides.rule(op, rule)
    if rule is None:
        if op in NON_DIFFERENTIABLE:
            return wrap(out)
        raise MissingRuleError(
            f"{op.value}: no gradient rule for this op; register one with "
            f"tpx.register_rule(op, vjp) or call it under tp.no_grad()"
        )
    od = out._data
    key = [op, out._backend, od.shape, od.dtype]
    for r in raw:
        data = r._data
        key += (data.shape, data.dtype)
    key = tuple(key)
    meta = _node_meta.get(key)
    if meta is None:
        meta = _new_meta(key, raw, out)
    in_meta, out_meta, real = meta
    if out_meta[1].kind not in "fc":
        return wrap(out)
    # NOTE: the edges first: a leaf's AccumulateGrad made here must get a smaller sequence
    # number than this node (the engine runs nodes by decreasing number)
    edges = tuple([_edge(x) for x in inputs])
    node = _new(GradFn)  # GradFn.__init__ written out, as in record_pair
    node.seq = next(_graph._seq)
    node.op, node.params, node.rule = op, params, rule
    node.vjp = rule.real_vjp if real else rule.vjp
    node.edges = edges
    node.needs_input_grad = needs_of(edges)
    node.in_meta, node.out_meta = in_meta, out_meta
    if overrides is not None:
        node.overrides = overrides.mark(op, out._backend)
    if rule.save or rule.save_output or rule.save_from is not None:
        _save(node, rule, raw, out, edges)
    scope = state.scope
    if scope:  # the class default is ""
        node.scope = scope
    node.code, node.lineno = user_frame(skip)
    t = _new(Tensor)  # wrap() inlined
    t._value, t._requires_grad, t.grad_fn = out, True, node
    t._recorded_version = out.version  # a view shares its base's counter, which may be past 0
    t._grad = t._accumulator_ref = t._rare_attrs = None
    if state.anomaly & NAN_CHECKS:
        _check_finite(op, node, out)
    if _mode.observers:
        _mode.emit("on_node_recorded", node, t)
        _mode.emit("on_node_forward", node, inputs, t, time.perf_counter() - start)
    return t


def _save(node: GradFn, rule: Any, raw: list, out: p10.Tensor, edges: tuple) -> None:
    # NOTE: P10 values are saved, not TPX tensors (the engine rebuilds those from the edges
    # under create_graph, as PyTorch's SavedVariable does): intermediate tpx.Tensor objects
    # are then freed as soon as the user drops them.
    n = len(raw)
    saved: list[Any] = [None] * (n + 1)
    for i in rule.save:
        if i < n:  # a custom op without a declared arity may get fewer inputs
            saved[i] = raw[i]
    if rule.save_from is not None:  # a variadic op (see Rule.save_from)
        for i in range(rule.save_from, n):
            saved[i] = raw[i]
    if rule.cross:  # each input only for the other's gradient (see Rule.cross)
        saved[0] = raw[0] if edges[1] is not None else None
        saved[1] = raw[1] if edges[0] is not None else None
    if rule.save_output:
        saved[n] = out
    node.saved = tuple(saved)
    node.versions = _versions(node.saved)
    if state.anomaly & SAVED_CHECKS:
        record_checksums(node)


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
# and whether all its values are real (the node then runs Rule.real_vjp). The dtypes in the key
# are the backend arrays' own; the metadata holds P10's.
_node_meta: dict[tuple, tuple] = {}


def _new_meta(key: tuple, raw: tuple | list, out: p10.Tensor) -> tuple:
    """The metadata of ``key`` (not cached yet): computed from the values, then cached."""
    in_meta = shared_meta(tuple([(r._data.shape, r.dtype) for r in raw]))
    real = all(dtype.kind != "c" for _, dtype in in_meta) and out.dtype.kind != "c"
    meta = (in_meta, shared((out._data.shape, out.dtype)), real)
    if len(_node_meta) >= 4096:
        _node_meta.clear()  # bounded, as tpx._graph.shared
    _node_meta[key] = meta
    return meta


def record_pair(
    op: Op,
    x: Any,
    y: Any,
    a: p10.Tensor,
    b: p10.Tensor | None,
    out: Any,
    params: dict | None = None,
    start: float = 0.0,
) -> Any:
    """Record the node of a shortcut operator: ``_record`` written out for one or two inputs
    of one dtype and backend, a floating output, no observer and no anomaly mode (checked by
    the callers). ``x``/``y`` are the TPX tensors or Python scalars, ``a``/``b`` their values
    (``y``/``b`` are None for a unary op). It records the same node as ``_record``."""
    rule = RULES.get(op)
    overrides = state.overrides
    if overrides is not None:
        rule = overrides.rule(op, rule)
    if rule is None:
        inputs, raw = ((x,), (a,)) if b is None else ((x, y), (a, b))
        return _record(op, inputs, raw, params or {}, out, start, skip=2)
    # the edges, _edge() inlined for the common cases
    e0 = e1 = None
    if x.__class__ is Tensor and x._requires_grad:
        e0 = x.grad_fn
        if e0 is None:  # a leaf: its AccumulateGrad, held weakly (see Tensor._accumulator)
            acc = x._accumulator_ref
            e0 = acc() if acc is not None else None
            if e0 is None:
                e0 = x._accumulator()
        elif x._recorded_version != (0 if (vc := x._value._vc) is None else vc[0]):
            e0 = _edge(x)  # raises, naming the node
    if b is not None and y.__class__ is Tensor and y._requires_grad:
        e1 = y.grad_fn
        if e1 is None:
            acc = y._accumulator_ref
            e1 = acc() if acc is not None else None
            if e1 is None:
                e1 = y._accumulator()
        elif y._recorded_version != (0 if (vc := y._value._vc) is None else vc[0]):
            e1 = _edge(y)
    ad, od = a._data, out._data
    # NOTE: the backend comes before the backend's dtype objects, so that keys of different
    # backends differ before their dtypes are compared (array-api-strict warns on that)
    if b is None:
        key = (op, a._backend, od.shape, od.dtype, ad.shape, ad.dtype)
    else:
        bd = b._data
        key = (op, a._backend, od.shape, od.dtype, ad.shape, ad.dtype, bd.shape, bd.dtype)
    meta = _node_meta.get(key)
    if meta is None:
        meta = _new_meta(key, (a,) if b is None else (a, b), out)
    # NOTE: GradFn.__init__ written out (one call less per recorded op)
    node = _new(GradFn)
    node.seq = next(_graph._seq)
    node.op = op
    node.params = {} if params is None else params
    node.rule = rule
    node.in_meta, node.out_meta, real = meta
    node.vjp = rule.real_vjp if real else rule.vjp
    if b is None:
        node.edges, node.needs_input_grad = (e0,), _NEEDS_ONE
    else:
        node.edges = (e0, e1)
        node.needs_input_grad = _NEEDS_TWO[e0 is not None][e1 is not None]
    if overrides is not None:
        node.overrides = overrides.mark(op, a._backend)
    save = rule.save
    if save or rule.save_output:
        if b is None:
            saved = (a if save else None, out if rule.save_output else None)
        elif rule.cross:  # each input only for the other's gradient (see Rule.cross)
            saved = (a if e1 is not None else None, b if e0 is not None else None, None)
        else:
            saved = (
                a if 0 in save else None,
                b if 1 in save else None,
                out if rule.save_output else None,
            )
        node.saved = saved
        # NOTE: the output is fresh; inputs without a version counter are at version 0
        if a._vc is None and (b is None or b._vc is None):
            node.versions = _ZEROS[len(saved)]
        else:
            node.versions = _versions(saved)
    scope = state.scope
    if scope:
        node.scope = scope
    node.code, node.lineno = user_frame(1)
    t = _new(Tensor)
    t._value, t._requires_grad, t.grad_fn = out, True, node
    t._recorded_version = 0  # a fresh output
    t._grad = t._accumulator_ref = t._rare_attrs = None
    if _mode.observers:  # the general path's events, with the inputs it would pass
        inputs = (x if x.__class__ is Tensor else a,)
        if b is not None:
            inputs += (y if y.__class__ is Tensor else b,)
        _mode.emit("on_node_recorded", node, t)
        _mode.emit("on_node_forward", node, inputs, t, time.perf_counter() - start)
    return t


def _install() -> None:
    # NOTE: set here, not in the class body: this module imports tpx._tensor
    Tensor.__p10_apply__ = staticmethod(apply_op)


_install()
