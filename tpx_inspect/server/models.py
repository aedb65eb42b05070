"""Pydantic models of every response of the tpx-inspect HTTP API (the OpenAPI schema's source).

JSON has no NaN or Infinity: every float that may be non-finite is typed :data:`Number`,
written as a number when finite and as the string ``"nan"``, ``"inf"`` or ``"-inf"`` otherwise
(see :func:`number`).

>>> number(float("nan")), number(2.5), number(None)
('nan', 2.5, None)
"""

from __future__ import annotations

import math
from dataclasses import MISSING
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, Field, create_model

from tpx_inspect.checks.report import STATUSES
from tpx_inspect.nodes import NODE_COLUMNS_DECLARED, Node

CheckStatus = Literal[STATUSES]  # type: ignore[valid-type]
"""PASS/FAIL/SKIPPED/PARTIAL, lower case: the one status model of ``tpx_inspect.checks``."""

Number = float | Literal["nan", "inf", "-inf"] | None


def number(x: Any) -> Number:
    """``x`` as a JSON-safe number: finite floats as they are, NaN/Inf as strings.

    >>> number(float("-inf")), number(3)
    ('-inf', 3.0)
    """
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


class ErrorBody(BaseModel):
    """The body of every 4xx answer: ``{"detail": "one line"}``."""

    detail: str


class Summary(BaseModel):
    """Statistics of one tensor (a node's output, a gradient)."""

    shape: list[int]
    dtype: str
    min: Number = None
    max: Number = None
    mean: Number = None
    std: Number = None
    norm: Number = None
    nan: int = 0
    inf: int = 0
    zeros: int = 0
    preview: list[Number] = Field(default_factory=list)
    has_value: bool = Field(False, description="the full value is stored in the trace")


class Values(BaseModel):
    """A full value, flattened in C order and cut at ``limit`` elements."""

    shape: list[int]
    dtype: str
    offset: int
    data: list[Number]
    total: int
    truncated: bool


class RunInfo(BaseModel):
    """One run folder (one trace) the server knows."""

    id: str
    name: str
    status: str = Field(description="running, ok, error, or unreadable")
    live: bool
    graphs: int
    steps: int
    error: str | None = None


class GraphInfo(BaseModel):
    """One recorded graph of a run (one backward call or training step)."""

    id: int
    run: str
    capture: int = Field(description="index of the capture inside the trace")
    step: int
    kind: str
    detail: str
    nodes: int
    edges: int
    roots: list[int]
    finite: bool
    nonfinite_nodes: int
    peak_saved_bytes: int
    backward_seconds: float


class Page(BaseModel):
    """Pagination of a list: ``offset``, ``limit`` and the ``total`` available."""

    offset: int
    limit: int
    total: int


class GraphList(BaseModel):
    """A page of the graphs of a run."""

    run: str
    page: Page
    graphs: list[GraphInfo]


class EdgeInfo(BaseModel):
    """One input of a node, in argument order (``src`` is null for a no-grad input)."""

    src: int | None
    shape: list[int]
    dtype: str


class NodeFigures(BaseModel):
    """The figures a node list shows next to a node's record (one step's measurements)."""

    title: str
    saved_bytes: int
    order: int | None
    grad_norm: Number = None
    forward_seconds: float = 0.0
    backward_seconds: float | None = None
    nonfinite: bool = False


def _column_type(f: Any) -> Any:
    api = f.metadata["column"][3]
    return _NODE_HINTS[f.name] if api is True else get_type_hints(api)["return"]


_NODE_HINTS = get_type_hints(Node)
NODE_INFO_COLUMNS = tuple(f for f in NODE_COLUMNS_DECLARED if f.metadata["column"][3] is not False)
"""The node-table columns the API shows in :class:`NodeInfo` (declared in tpx_inspect.nodes)."""

NodeInfo = create_model(
    "NodeInfo",
    __base__=NodeFigures,
    __doc__="The static record of one node (the trace's node columns) plus the figures a list "
    "shows.",
    id=(int, ...),
    **{f.name: (_column_type(f), f.default if f.default is not MISSING else ...)
       for f in NODE_INFO_COLUMNS},
)  # fmt: skip


def node_columns(n: Node) -> dict[str, Any]:
    """The :data:`NODE_INFO_COLUMNS` of node ``n`` as :class:`NodeInfo` takes them."""
    out = {}
    for f in NODE_INFO_COLUMNS:
        api, value = f.metadata["column"][3], getattr(n, f.name)
        out[f.name] = value if api is True else api(value)
    return out


class NodeList(BaseModel):
    """A page of nodes (in id order, or backward order for ``/backward``)."""

    run: str
    graph: int
    page: Page
    nodes: list[NodeInfo]


class SavedInfo(BaseModel):
    """A value a node saved for backward (``slot`` -1 is its output)."""

    slot: int
    shape: list[int]
    dtype: str
    bytes: int


class NodeDetail(BaseModel):
    """Everything recorded about one node: structure, values, gradients, times."""

    node: NodeInfo
    params: dict[str, Any]
    consumers: list[int]
    saved: list[SavedInfo]
    released: int | None
    output: Summary | None
    grad: Summary | None
    grads_out: list[Summary | None]
    consts: list[Summary | None]
    values: dict[str, Values | None] = Field(
        default_factory=dict, description="full values: output, grad, input.K, grad_out.K"
    )


class Finding(BaseModel):
    """One problem a check found, attributed to a node when it can be."""

    check: str
    node: int | None
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class SkipReason(BaseModel):
    """Why a check skipped items: one reason, how many, and the node ids (none: whole graph)."""

    reason: str
    count: int
    nodes: list[int]


class CheckInfo(BaseModel):
    """The outcome of one check: its status, the same one-line summary as the CLI's, the
    grouped reasons of what it skipped and its findings."""

    name: str
    status: CheckStatus
    summary: str
    checked: int = 0
    skipped: int = 0
    reasons: list[SkipReason] = Field(default_factory=list)
    findings: list[Finding]


class NodeVerdict(BaseModel):
    """A node's verdict from a check run live when the trace was recorded (``tpx-inspect run
    --check``): the user's code was importable then, so custom Functions were checked."""

    node: int
    check: str
    status: CheckStatus
    message: str


class CheckReport(BaseModel):
    """The checks run on a saved graph (from its saved values; no user code runs). ``ok``:
    no check failed; ``status`` and ``headline`` say whether all of them checked something."""

    run: str
    graph: int
    ok: bool
    status: CheckStatus = "pass"
    headline: str = ""
    checks: list[CheckInfo]
    live: list[NodeVerdict] = Field(default_factory=list)


class NodeChange(BaseModel):
    """How one node differs between two graphs (``id`` in A, ``id_b`` in B; null when absent)."""

    id: int | None
    id_b: int | None
    status: str = Field(description="added, removed, changed or same")
    changes: list[str]
    output_diff: Number = None
    grad_diff: Number = None
    saved_bytes_a: int = 0
    saved_bytes_b: int = 0


class GraphDiff(BaseModel):
    """The differences between graph A and graph B, node by node."""

    a: str
    b: str
    same_structure: bool
    nodes_a: int
    nodes_b: int
    added: int
    removed: int
    changed: int
    max_output_diff: Number = None
    max_grad_diff: Number = None
    peak_saved_bytes_a: int
    peak_saved_bytes_b: int
    page: Page
    nodes: list[NodeChange]


class Feed(BaseModel):
    """What a live run recorded since the viewer last asked (long polling)."""

    run: str
    status: str
    graphs: int
    new: list[GraphInfo]
