"""Capture: observe TPX through its observer API and keep the graphs whose backward ran.

``with capture() as cap:`` records; ``cap.trace`` is the :class:`~tpx_inspect.records.Trace`.
What is kept is decided by a :class:`Policy` (which backward steps) and a value policy (which
full tensor values). Capture only reads: it never writes a tensor, so results are bitwise
identical with and without it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

import tpx
from tpx import observe
from tpx_inspect import _deferred, _version
from tpx_inspect import format as trace_format
from tpx_inspect._attach import Attachment
from tpx_inspect._backward_records import BackwardRecords
from tpx_inspect._build import GraphBuilder
from tpx_inspect._checkpoint import CheckpointClock, drop_checkpoint_sidecars, write_checkpoint
from tpx_inspect._deferred import BUILD_MODES, BuildQueue, Deferred, attach_nodes, deferral
from tpx_inspect._live import LiveState, roots_of
from tpx_inspect._pending import STEP, NodeMap, frozen_record, input_consts, pending_of
from tpx_inspect._policy import DEFAULT_POLICY, THREAD_POLICIES, VALUE_POLICIES, Policy
from tpx_inspect._util import paused_gc
from tpx_inspect._verdict import step_finite
from tpx_inspect.records import ErrorInfo, Graph, Run, Trace
from tpx_inspect.summary import summarize

get_ident = threading.get_ident

FORMAT_VERSION = _version.FORMAT_VERSION[0]
"""Version of the trace format written by this code (see ``schema/trace.schema.json``)."""


class Capture(contextlib.ContextDecorator):
    """Records every graph whose backward runs inside; a context manager and a decorator.

    Options: ``policy`` (a :class:`Policy` or its string form), ``values`` (``none`` /
    ``small`` / ``all``: which full values to keep; ``raw``: every full value and no
    statistics or previews, what the live checks read), ``value_limit`` (elements, for
    ``small``), ``params`` (``{name: tensor}`` or ``named_parameters()``-style pairs to label
    parameters; they win over ``Tensor.name``, which ``tpx.nn`` modules set to
    ``model.0.weight`` and which labels a leaf otherwise), ``timing`` (False records zero
    times: deterministic output), ``source_root`` (source paths below it are stored relative),
    ``path`` (save there on exit, even after an error), ``name`` (the run's name), ``threads``
    (``"current"``: only ops and backward passes of the thread that entered the capture, so a
    data loader or another model running in other threads stays out of the trace; ``"all"``:
    every thread, each backward pass kept apart from the others), ``checkpoint`` (a JSON path:
    after every kept step the trace so far is written there, each file replaced whole, so
    that a run killed at any point keeps its last completed step; see :meth:`save`; a failed
    write is kept in ``checkpoint_error`` and ends the checkpoints, never the script),
    ``live`` (also keep what only a live run knows, for the checks: each graph's
    :class:`~tpx_inspect.check_view.LiveInfo`, every step in full, and a graph of the nodes
    recorded since the last backward in :attr:`graphs`; see :func:`tpx_inspect.checks.record`),
    ``where`` (with ``live``: the location given to records without a frame of user code),
    ``build`` (``"lazy"``: a kept step's graph record is built when first read, see
    docs/capture.md; ``"eager"``: at the end of its backward, where a build error then
    surfaces).

    >>> import tpx as tp
    >>> w = tp.ones((2, 2), requires_grad=True)
    >>> with Capture(params={"w": w}) as cap:
    ...     (tp.ones((1, 2)) @ w).sum().backward()
    >>> [(n.kind, n.title) for n in cap.trace.graphs[0].nodes]
    [('param', 'w'), ('op', 'matmul'), ('loss', 'sum')]
    """

    def __init__(
        self,
        policy: Policy | str = DEFAULT_POLICY,
        *,
        values: str = "small",
        value_limit: int = 4096,
        params: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
        timing: bool = True,
        source_root: str | None = None,
        path: str | None = None,
        name: str = "capture",
        threads: str = "current",
        checkpoint: str | None = None,
        live: bool = False,
        where: str | None = None,
        build: str = "lazy",
    ) -> None:
        for option, value, choices in (
            ("values", values, VALUE_POLICIES), ("threads", threads, THREAD_POLICIES),
            ("build", build, BUILD_MODES),
        ):  # fmt: skip
            if value not in choices:
                raise ValueError(f"{option} must be one of {choices}, got {value!r}")
        self.build = build
        self.threads = threads
        self.policy = Policy.parse(policy)
        self.values = values
        self.value_limit = value_limit if values == "small" else (0 if values == "none" else -1)
        self._live = LiveState(where) if live else None
        self.timing = timing
        self.path = path
        self.name = name
        self.checkpoint = checkpoint
        self.checkpoint_error: str | None = None
        self._checkpoints = CheckpointClock()
        root = os.path.abspath(os.getcwd() if source_root is None else source_root)
        labels = _deferred.labels_of(params)
        self._builder = GraphBuilder(root, self.value_limit, labels, stats=values != "raw")
        self._pending = NodeMap()
        # NOTE: one stack of running backward passes per thread, and one lock for what all
        # threads share (the pending nodes, the step counter, the stored graphs)
        self._stacks: dict[int, list[BackwardRecords | None]] = {}
        self._lock = threading.RLock()
        self._thread: int | None = None
        self._wants: tuple[int, bool] = (-1, False)
        self._graphs: list[Graph] = []
        # NOTE: kept steps waiting for their build (see build="lazy"), in order
        self._queue = BuildQueue(self._build_entry, lambda: len(self._graphs))
        self._steps = 0
        self._attached = Attachment(self)  # NOTE: registered with TPX while entered, not paused
        self._error: ErrorInfo | None = None
        self._finished = False

    # -- context manager (a decorator too: ContextDecorator) ---------------------------------
    def __enter__(self) -> Capture:
        if not self._attached.entered:
            self._thread = threading.get_ident() if self.threads == "current" else None
        self._attached.enter()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if not self._attached.exit():
            return
        try:
            clean = isinstance(exc, SystemExit) and exc.code in (None, 0)
            if exc is not None and not clean:
                self.record_error(exc)
        finally:
            self._finished = True
            failed = []
            if self.path is not None:  # NOTE: a failed build: the others are saved all the same
                failed = self._settle()
                self.save(self.path, self._trace())
        if failed and exc is None:
            raise failed[0]

    def _settle(self) -> list:
        """Build every waiting graph; the failed builds (the first one the run's error)."""
        with self._lock:
            self._queue.build_all()
            failed = self._queue.take_failed()
            if failed and self._error is None:
                self.record_error(failed[0])
        return failed

    # -- public -----------------------------------------------------------------------------------
    def paused(self) -> contextlib.AbstractContextManager[None]:
        """Leave what runs inside out of the trace (an evaluation, a logging step): the capture
        is no TPX observer meanwhile, and a backward inside is no step of it. Pauses nest; see
        docs/capture.md for what crosses a pause.

        >>> import tpx as tp
        >>> x = tp.ones(2, requires_grad=True)
        >>> with Capture() as cap:
        ...     (x * 2).sum().backward()
        ...     with cap.paused():
        ...         (x * 3).sum().backward()
        ...     (x * 4).sum().backward()
        >>> [(g.step, g.output(g.roots[0]).preview) for g in cap.trace.graphs]
        [(0, (4.0,)), (1, (8.0,))]
        """
        return self._attached.paused(self._cannot_pause)

    def _cannot_pause(self) -> str | None:
        if self._thread is not None and get_ident() != self._thread:
            return "a capture of threads='current' is paused by its own thread only"
        with self._lock:  # NOTE: a pass cut by a pause would never end in the capture
            running = any(self._stacks.values())
        return (
            "a backward pass is running: pause between passes, not from a hook" if running else None
        )

    def add(self, *roots: Any) -> Graph:
        """Record the graph behind ``roots`` (tensors) now, without running backward."""
        nodes = []
        for t in roots:
            if not isinstance(t, tpx.Tensor) or not t.requires_grad:
                raise TypeError(f"capture.add: expected tensors that require grad, got {t!r}")
            nodes.append(observe.grad_node(t))
        with self._lock:
            self._queue.build_all()
            return self._store(self._build("roots", -1, nodes, tpx.reachable(nodes), None))

    def record_error(self, exc: BaseException) -> None:
        """Record ``exc`` as the error that ended this run, plus a ``partial`` graph of what
        was recorded since the last backward."""
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self._error = ErrorInfo(type(exc).__name__, str(exc), tb)
        with self._lock:
            self._queue.build_all()
            roots = roots_of([n for n, p in list(self._pending.items()) if p[STEP] == self._steps])
            if roots:
                self._store(self._build("partial", -1, roots, tpx.reachable(roots), None))

    @property
    def graphs(self) -> tuple[Graph, ...]:
        """The graph of every backward kept; with ``live``, then one of the nodes recorded
        since the last backward (if any): what the checks read."""
        self._ready()
        roots = self._live.rest_roots() if self._live is not None else []
        if not roots:
            return tuple(self._graphs)
        rest = self._build("roots", -1, roots, tpx.reachable(roots), None)
        return (*self._graphs, dataclasses.replace(rest, id=len(self._graphs)))

    def graph(self) -> Graph:
        """The one graph recorded (see :attr:`graphs`); an error names how many there are."""
        graphs = self.graphs
        if len(graphs) != 1:
            raise ValueError(
                f"the recording holds {len(graphs)} graphs (one per backward): read "
                "`.graphs`, or check them with run_graph_checks one at a time"
            )
        return graphs[0]

    @property
    def trace(self) -> Trace:
        """The trace recorded so far (one run); builds the graphs still waiting (see
        ``build``), and raises a :class:`~tpx_inspect._deferred.DeferredBuildError` if one
        failed (the next read gives the others)."""
        self._ready()
        return self._trace()

    def _trace(self) -> Trace:
        status = "error" if self._error else ("ok" if self._finished else "running")
        run = Run(
            0, self.name, status, self._steps, self.policy.to_json(), tuple(self._graphs),
            self._error,
        )  # fmt: skip
        meta = {"producer": "tpx_inspect", "tpx_version": tpx.__version__, "values": self.values}
        return Trace(FORMAT_VERSION, (run,), meta)

    def save(
        self, path: str, trace: Trace | None = None, *, compress: bool | None = None
    ) -> tuple[str, str]:
        """Save the trace so far (or ``trace``, e.g. annotated from it) to ``path`` (JSON) and
        its ``.npz`` sidecar (``compress`` as :func:`tpx_inspect.save` takes it). Saved to the
        ``checkpoint`` path, it replaces the last checkpoint, whose sidecars it removes."""
        paths = trace_format.save(self.trace if trace is None else trace, path, compress=compress)
        if self.checkpoint is not None:
            drop_checkpoint_sidecars(self.checkpoint, path)
        return paths

    # -- observer events ----------------------------------------------------------------------
    def _stack(self) -> list[BackwardRecords | None]:
        """The running backward passes of the calling thread."""
        return self._stacks.setdefault(threading.get_ident(), [])

    # NOTE: the event handlers run several times per recorded node: the thread check and the
    # per-thread stack are written out in each rather than called
    def on_node_forward(self, node: Any, inputs: tuple, output: Any, seconds: float) -> None:
        if self._thread is not None and get_ident() != self._thread:
            return
        step = self._steps
        if step != self._wants[0]:  # the policy asked once per step, not once per node
            self._wants = (step, self.policy.wants(step))
        pmap = self._pending
        if self._wants[1]:
            b = self._builder
            record = frozen_record(
                seconds if self.timing else 0.0, output.p10, input_consts(node, inputs),
                node.saved, step, b.keep, b.stats, node.out_meta, pmap.token,
            )  # fmt: skip
        elif self.policy.nonfinite:
            seconds = seconds if self.timing else 0.0
            record = pending_of(seconds, output.p10, node, inputs, step, pmap.token)
        else:
            return
        # NOTE: NodeMap.__setitem__ written out: the node's slot (it goes with the node: no
        # weak reference, no callback), unless another observer holds it; atomic, no lock
        if node.observed is None:
            node.observed = record
        else:
            pmap[node] = record
        if self._live is not None:
            self._live.forward(node, output)

    def on_backward_start(self, roots: Any, grads: dict, order: list, info: Any = None) -> None:
        if self._thread is not None and get_ident() != self._thread:
            return
        with self._lock:
            step = self._steps
            self._steps += 1
        wanted = self.policy.wants(step)
        if not wanted and not self.policy.nonfinite:
            self._stack().append(None)
            return
        is_grad = info is not None and info.is_grad
        create_graph = info is not None and info.create_graph
        b = BackwardRecords(step, roots, grads, order, wanted, is_grad, self.timing, create_graph)
        self._stack().append(b)

    def on_nodes_executed(self, runs: list, sums: list) -> None:
        stack = self._stacks.get(get_ident())
        b = stack[-1] if stack else None  # None too for a thread that the capture ignores
        if b is not None:
            b.add(runs, sums)
        live = self._live
        if live is not None:
            for node in runs[0::4]:
                live.executed(node)

    def on_backward_end(self, roots: Any) -> None:
        if self._thread is not None and get_ident() != self._thread:
            return
        if self._live is not None:
            self._live.since_backward = []
        stack = self._stack()
        b = stack.pop() if stack else None
        if b is None:
            return
        if not b.wanted and step_finite(b, self._pending, self._builder):
            return
        b.settle()
        lazy = self.build == "lazy" and self._live is None  # NOTE: live reads it at once
        bu = self._builder
        entry = deferral(b, self._pending, bu.labels, bu.limit) if lazy else None
        with self._lock:  # graph ids are positions: build and store as one step
            if entry is not None:
                self._queue.defer(entry)
            else:
                self._queue.build_all()
                self._store(self._build("backward", b.step, list(b.roots), b.order, b))
            if self.checkpoint is not None and self.checkpoint_error is None:
                self._write_checkpoint(self.checkpoint)

    # -- deferred builds (see build="lazy") -------------------------------------------------------
    def _ready(self) -> None:
        """Build every waiting graph (in order); raise the first failure not raised yet."""
        with self._lock:
            self._queue.build_all()
            failed = self._queue.take_failed()
        if failed:
            raise failed[0]

    def _build_entry(self, e: Deferred) -> Graph:
        return self._store(self._build("backward", e.step, [], [], e.backward, e))

    # -- internals ----------------------------------------------------------------------------
    def _build(
        self, kind: str, step: int, roots: list, order: list, b: BackwardRecords | None,
        entry: Deferred | None = None,
    ) -> Graph:  # fmt: skip
        live = self._live
        if live is not None:  # NOTE: the checks read every step's values: none as stats only
            self._builder.structures.clear()
        leaves = None
        with paused_gc(promote=True):  # NOTE: the records are kept: no young scan of them
            if entry is not None:  # NOTE: a deferred step's nodes, put back (see _deferred)
                roots, order, leaves = attach_nodes(entry)
            graph = self._builder.build(
                run=0, gid=len(self._graphs), kind=kind, step=step, roots=roots, order=order,
                pending=self._pending, backward=b, timing=self.timing, leaves=leaves,
            )  # fmt: skip
        return graph if live is None else live.attach(graph, order, b, self._builder.root)

    def _write_checkpoint(self, path: str) -> None:
        if self._checkpoints.due():
            self._queue.build_all()
            self.checkpoint_error = write_checkpoint(self._trace(), path, self._checkpoints)

    def _store(self, graph: Graph) -> Graph:
        self._graphs.append(graph)
        return graph


def capture(policy: Policy | str = DEFAULT_POLICY, **options: Any) -> Capture:
    """Record the graphs whose backward runs inside (a context manager and a decorator).

    >>> import tpx as tp, tpx_inspect
    >>> with tpx_inspect.capture() as cap:
    ...     x = tp.ones(3, requires_grad=True)
    ...     (x * x).sum().backward()
    >>> g = cap.trace.graphs[0]
    >>> g.grad(0).preview, g.find(op="mul")[0].inputs[0].shape
    ((2.0, 2.0, 2.0), (3,))
    """
    return Capture(policy, **options)


__all__ = [
    "DEFAULT_POLICY", "FORMAT_VERSION", "THREAD_POLICIES", "VALUE_POLICIES", "Capture",
    "Policy", "capture", "summarize",
]  # fmt: skip
