"""A cluster task's groups packed column-wise, each distinct array shipped once.

A task (a few groups of nodes, each group of one layout) becomes a few *pools*, one stacked
NumPy array per dtype and shape holding every distinct array of the task once, and per group
its columns (one per input, output and gradient) as row numbers into a pool, with the node
ids, names, sources and edges and one value-free description of the first node. Arrays are
told apart by identity: a node's output is usually the very array its consumer recorded as an
input, and a node's incoming gradient the one its consumer's rule returned, so a task of the
chain benchmark ships about half the bytes that one stacked array per column would (and packs
and sends them in fewer, larger frames). A worker takes each column from its pool (one C-level
copy) and makes the node records as views of its rows.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from typing import Any

import numpy as np

from tpx_inspect.check_view import Execution, NodeRecord


@dataclasses.dataclass(frozen=True)
class Rows:
    """A stacked column: rows ``rows`` of the task's pool number ``pool``."""

    pool: int
    rows: np.ndarray


class _Pools:
    """The columns of a task, gathered to be pooled by dtype and shape when all are in."""

    def __init__(self) -> None:
        self.columns: dict[tuple, list[list[np.ndarray]]] = {}

    def column(self, values: list) -> list:
        """A column, to be made rows of a pool by :meth:`stacked` when ``values`` are NumPy
        arrays of one dtype and shape (a list otherwise: Nones, Python numbers, mixed
        layouts, object arrays)."""
        first = values[0]
        # NOTE: one C-level pass over the classes here; dtypes and shapes are checked on the
        # distinct arrays of a pool (a pool that mixes them leaves its columns lists)
        if first.__class__ is not np.ndarray or set(map(type, values)) != {np.ndarray}:
            return values
        self.columns.setdefault((first.dtype, first.shape), []).append(values)
        return values

    def stacked(self, groups: list[dict]) -> list[np.ndarray]:
        """Every pool as one array of the distinct arrays (by identity) of its columns, and
        each pooled column of ``groups`` replaced by its rows in it."""
        rows: dict[int, Rows] = {}
        pools = []
        for (dtype, shape), columns in self.columns.items():
            values = list(itertools.chain.from_iterable(columns))
            ids = np.fromiter(map(id, values), dtype=np.uintp, count=len(values))
            _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
            distinct = list(map(values.__getitem__, first.tolist()))
            pool = _stack(distinct, dtype, shape)
            if pool is None:
                continue  # NOTE: its columns stay lists
            pools.append(pool)
            start = 0
            for c in columns:
                rows[id(c)] = Rows(len(pools) - 1, inverse[start : start + len(c)])
                start += len(c)
        for g in groups:
            for key in ("inputs", "grad_inputs"):
                if g[key] is not None:
                    g[key] = [rows.get(id(c), c) for c in g[key]]
            for key in ("output", "grad_output"):
                g[key] = rows.get(id(g[key]), g[key])
        return pools


def _stack(arrays: list, dtype: np.dtype, shape: tuple) -> np.ndarray | None:
    """``arrays`` stacked, when every one is of ``dtype`` and ``shape``; else None.

    NOTE: shapes are checked without a tuple per array: each array's length here, the other
    axes by ``np.concatenate`` (it refuses arrays whose other axes differ)."""
    n = len(arrays)
    if dtype.hasobject or set(map(_dtype, arrays)) != {dtype}:
        return None
    if not shape:
        return np.array(arrays).reshape(n) if set(map(_ndim, arrays)) == {0} else None
    if set(map(len, arrays)) != {shape[0]}:
        return None
    try:  # NOTE: one C-level copy per array, cheaper than np.array's discovery
        stacked = np.concatenate(arrays)
    except ValueError:
        return None
    return stacked.reshape(n, *shape) if stacked.shape == (n * shape[0], *shape[1:]) else None


_dtype = operator.attrgetter("dtype")
_ndim = operator.attrgetter("ndim")


def pack(task: list[list]) -> dict[str, Any]:
    """A task's groups of ``(node, execution)`` items, each group of one layout, column-wise:
    the pools of distinct arrays, and per group its columns as rows of them (non-array inputs,
    the same for the whole group, as they are) and the first node without its values.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     x = tp.asarray([0.5, 1.5], requires_grad=True)
    ...     (x.sin() + x.sin()).sum().backward()
    >>> g = rec.graph()
    >>> p = pack([[(g.replay_node(i), g.execution(i)) for i in (1, 2)]])
    >>> p["groups"][0]["ids"].tolist(), [a.shape for a in p["pools"]]  # x and the gradient once
    ([1, 2], [(6, 2)])
    >>> [[n.id for n, _ in items] for items, _ in unpack(p)]
    [[1, 2]]
    """
    pools = _Pools()
    groups = [_group(items, pools) for items in task]
    return {"pools": pools.stacked(groups), "groups": groups}


def _group(items: list, pools: _Pools) -> dict[str, Any]:
    # NOTE: the columns are read by C-level maps (itemgetter, attrgetter), not Python loops
    nodes = list(map(_first, items))
    first, ex = nodes[0], items[0][1]
    arrays = [isinstance(x, np.ndarray) for x in first.inputs]
    inputs = list(map(_inputs, nodes))
    columns = [
        pools.column(list(map(operator.itemgetter(i), inputs))) if a else first.inputs[i]
        for i, a in enumerate(arrays)
    ]
    grads = grad_output = None
    if ex is not None:
        execs = list(map(_second, items))
        given = list(map(_grad_inputs, execs))
        grads = [pools.column(list(map(operator.itemgetter(i), given)))
                 for i in range(len(ex.grad_inputs))]  # fmt: skip
        grad_output = pools.column(list(map(_grad_output, execs)))
    return {
        "first": dataclasses.replace(first, inputs=None, output=None, rule=_rule(first)),
        "ids": np.fromiter(map(_id, nodes), dtype=np.int64, count=len(nodes)),
        "text": list(map(_text, nodes)),
        "inputs": columns,
        "arrays": arrays,
        "output": pools.column(list(map(_output, nodes))),
        "grad_output": grad_output,
        "grad_inputs": grads,
    }


_first, _second = operator.itemgetter(0), operator.itemgetter(1)
_id, _inputs, _output = (operator.attrgetter(f) for f in ("id", "inputs", "output"))
_grad_inputs, _grad_output = operator.attrgetter("grad_inputs"), operator.attrgetter("grad_output")
_text = operator.attrgetter("name", "scope", "source", "edges")


def _rule(node: NodeRecord) -> Any:
    """The rule to ship with ``node``: None (the worker's table) for TPX's own rule of the op,
    as registered here; any other rule (a user's) as it is.

    NOTE: TPX's rule functions do not pickle by reference (the table holds other objects
    than the module's names): shipped by value, a rule is no longer the table's, and a
    worker would check its nodes one at a time.
    """
    import tpx

    rule = node.rule
    builtin = getattr(getattr(rule, "vjp", None), "__module__", "") or ""
    if rule is tpx.rules.RULES.get(node.op) and builtin.startswith("tpx."):
        return None
    return rule


def unpack(p: dict[str, Any]) -> list[tuple[list, tuple]]:
    """Per group of a :func:`pack`: its ``(node, execution)`` items, their values views of
    its stacked columns, and those columns as ``local.check_group`` reads them
    (``(inputs, output, grad_output, grad_inputs)``)."""
    return [_unpack_group(g, p["pools"]) for g in p["groups"]]


def _unpack_group(g: dict[str, Any], pools: list) -> tuple[list, tuple]:
    def column(c: Any) -> Any:
        return pools[c.pool][c.rows] if c.__class__ is Rows else c

    inputs = [column(x) if a else x for x, a in zip(g["inputs"], g["arrays"])]
    output, grad_output = column(g["output"]), column(g["grad_output"])
    grad_inputs = None if g["grad_inputs"] is None else [column(c) for c in g["grad_inputs"]]
    base = vars(g["first"])
    ids = g["ids"].tolist()
    n = len(ids)
    ins = [_rows(x, n) if a else [x] * n for x, a in zip(inputs, g["arrays"])]
    rows = zip(ids, g["text"], zip(*ins) if ins else [()] * n, _rows(output, n))
    nodes = [
        _record(NodeRecord, base, id=nid, name=name, scope=scope, source=source, edges=edges,
                inputs=xs, output=out)
        for nid, (name, scope, source, edges), xs, out in rows
    ]  # fmt: skip
    columns = (inputs, output, grad_output, grad_inputs)
    if grad_inputs is None:
        return [(node, None) for node in nodes], columns
    grads = [_rows(c, n) for c in grad_inputs]
    execs = zip(ids, _rows(grad_output, n), zip(*grads) if grads else [()] * n)
    items = [
        (node, _record(Execution, {}, node=nid, grad_output=go, grad_inputs=gs))
        for node, (nid, go, gs) in zip(nodes, execs)
    ]
    return items, columns


def _record(cls: type, base: dict, **changes: Any) -> Any:
    """``dataclasses.replace`` of the record whose fields are ``base``, without its cost
    (it calls ``__init__`` with every field). Measured, 10k nodes: unpacking took 0.25 s CPU
    with ``replace`` and the cyclic GC on (it scanned the new records again and again), 0.06 s
    this way under ``paused_gc`` (the records hold no cycles)."""
    record = object.__new__(cls)
    fields = record.__dict__
    fields.update(base)
    fields.update(changes)
    return record


def _rows(column: Any, n: int) -> list:
    """The ``n`` rows of a column: views of a stacked array (0-d arrays for scalar values, as
    recorded: ``x[b]`` would be a NumPy scalar), the values of a list, or Nones."""
    if column.__class__ is np.ndarray:
        return list(column) if column.ndim > 1 else [column[b, ...] for b in range(n)]
    return [None] * n if column is None else column
