"""A values='raw' capture (values for the live checks, no statistics) cannot be saved: its
summaries would read as zero NaN/Inf counts that nobody computed."""

from __future__ import annotations

import pytest

import tpx as tp
import tpx_inspect
from tpx_inspect.errors import TraceFormatError


def _trace(values: str) -> tpx_inspect.Trace:
    with tpx_inspect.capture(values=values) as cap:
        x = tp.tensor([1.0, float("nan")], requires_grad=True)
        (x * 2.0).sum().backward()
    return cap.trace


def test_raw_trace_is_refused_by_save(tmp_path) -> None:
    with pytest.raises(TraceFormatError, match="values='raw'"):
        tpx_inspect.save(_trace("raw"), str(tmp_path / "t.json"))
    assert not (tmp_path / "t.json").exists()


def test_all_values_trace_saves_and_keeps_its_nan_count(tmp_path) -> None:
    path = str(tmp_path / "t.json")
    tpx_inspect.save(_trace("all"), path)
    graph = tpx_inspect.load(path).runs[0].graphs[0]
    assert not graph.finite
