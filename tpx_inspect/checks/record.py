"""Record live for the checks: a capture that keeps every value and what only a live run knows.

The checks read one graph model, the captured :class:`~tpx_inspect.records.Graph` (through
``graph.replay_node(i)`` and ``graph.backwards``). :func:`record` is a
:class:`~tpx_inspect.capture.Capture` with the ``live`` option: every step and every value
kept (``values="raw"``: the values without statistics or previews, which the checks do not
read), and each graph's :class:`~tpx_inspect.check_view.LiveInfo` filled: the rule objects and
backends of the nodes, ``tp.Function`` classes, hooks, ``tpx.grad`` and the executions in
engine order.
"""

from __future__ import annotations

from tpx_inspect._policy import Policy
from tpx_inspect.capture import Capture


class Recording(Capture):
    """A capture for the checks: every step (up to ``max_backwards``) in full, every value
    kept without statistics (``keep_values=False``: none), no timings, every thread, and the
    ``live`` option (see :class:`~tpx_inspect.capture.Capture`); nothing else of a capture
    changes.

    Reusable as the ``cap`` of :func:`tpx_inspect.script.run_captured`.

    >>> import tpx as tp
    >>> with Recording() as rec:
    ...     _ = tp.ones(2, requires_grad=True) * 2
    >>> [n.name for n in rec.graph().replay_nodes]
    ['AccumulateGrad', 'MulBackward']
    """

    def __init__(self, keep_values: bool = True, max_backwards: int | None = None) -> None:
        policy = Policy() if max_backwards is None else Policy(first=max_backwards)
        values = "raw" if keep_values else "none"
        super().__init__(
            policy, values=values, timing=False, threads="all", name="checks", live=True
        )

    @property
    def where(self) -> str | None:
        """Where records without a frame of user code are attributed (set before recording)."""
        return self._live.where if self._live is not None else None

    @where.setter
    def where(self, value: str | None) -> None:
        if self._live is not None:
            self._live.where = value


def record(keep_values: bool = True, max_backwards: int | None = None) -> Recording:
    """Observe every node recorded and every backward run inside the ``with`` block.

    With ``max_backwards``, observation stops after that many backward passes (a training
    script repeats the same graph; keeping every value of every step costs memory).

    >>> import tpx as tp
    >>> with record() as rec:
    ...     y = tp.asarray([0.5], requires_grad=True).sin()
    >>> rec.graph().replay_nodes[-1].name
    'SinBackward'
    """
    return Recording(keep_values, max_backwards)
