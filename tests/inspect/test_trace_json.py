"""The trace JSON with orjson and with the standard library (orjson is optional): the same
documents, the same refusals and messages, files of one readable by the other. (Without orjson
installed both halves run the standard library.)"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tpx_inspect
from tests.inspect._inspect_graphs import small_capture
from tpx_inspect import TraceFormatError, _json
from tpx_inspect.format import to_json


@pytest.fixture(params=["orjson", "stdlib"])
def engine(request, monkeypatch):
    if request.param == "stdlib":
        monkeypatch.setattr(_json, "orjson", None)
    return request.param


def test_dumps_and_loads_agree_with_the_standard_library(engine):
    doc = {"a": [1, -2, 3.5, 1e-05, None, True], "s": "é\u2603", "n": {"x": []}}
    blob = _json.dumps(doc)
    assert blob.endswith(b"\n")
    assert json.loads(blob) == doc == _json.loads(blob)


@pytest.mark.parametrize("text", [b"[NaN]", b"[1e400]", b"[Infinity]", b'{"a": 1', b"\xff\xfe"])
def test_both_refuse_what_is_not_strict_json(engine, text):
    with pytest.raises(ValueError):
        _json.loads(text)


def test_a_trace_saved_by_one_loads_with_the_other(tmp_path, monkeypatch):
    trace = small_capture().trace
    fast = str(tmp_path / "fast.json")
    tpx_inspect.save(trace, fast)
    monkeypatch.setattr(_json, "orjson", None)
    slow = str(tmp_path / "slow.json")
    tpx_inspect.save(trace, slow)
    for path in (fast, slow):
        loaded = tpx_inspect.load(path)
        assert loaded.graphs[0].nodes == trace.graphs[0].nodes
        np.testing.assert_allclose(
            loaded.graphs[0].tables.summaries, trace.graphs[0].tables.summaries, equal_nan=True
        )
    monkeypatch.undo()
    assert to_json(tpx_inspect.load(slow))[0]["runs"] == to_json(tpx_inspect.load(fast))[0]["runs"]


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda b: b[: len(b) // 2], "truncated trace JSON"),
        (lambda b: b.replace(b'"format"', b'"format":NaN,"x"', 1), "strict JSON has no NaN"),
        (lambda b: b.replace(b'"capture"', b'"\\ud800"', 1), "lone surrogate"),
    ],
)
def test_a_damaged_file_gets_the_same_message_with_either(tmp_path, monkeypatch, damage, says):
    path = str(tmp_path / "t.json")
    tpx_inspect.save(small_capture().trace, path)
    with open(path, "rb") as f:
        blob = damage(f.read())
    with open(path, "wb") as f:
        f.write(blob)
    assert blob.count(b"\\ud800") <= 1
    messages = []
    for blocked in (False, True):
        if blocked:
            monkeypatch.setattr(_json, "orjson", None)
        with pytest.raises(TraceFormatError) as err:
            tpx_inspect.load(path)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and says in messages[0], messages
    assert os.path.basename(path) in messages[0]
