"""``load`` reads the sidecar on a thread while the schema check runs; ``from_json`` reads it
after the check, on the caller's thread. Both must refuse every damaged trace of the fuzz
corpus with the same message, and report a damaged document before a damaged sidecar.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

import tpx_inspect
from tests.helpers.mutations import Mutation, build_corpus, make_base
from tpx_inspect import TraceFormatError, _trace_load
from tpx_inspect._safe_read import LoadLimits


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Mutation, Path]]:
    root = tmp_path_factory.mktemp("fuzz_paths")
    return build_corpus(make_base(root / "base"), root / "cases")


def _threaded(path: str) -> str | None:
    try:
        tpx_inspect.load(path)
    except TraceFormatError as e:
        return str(e)
    return None


def _plain(path: str) -> str | None:
    limits = LoadLimits.from_env()
    try:
        doc = _trace_load._read_json(path, limits)
        _trace_load.from_json(doc, path, limits=limits)
    except TraceFormatError as e:
        return str(e)
    return None


def test_both_paths_give_the_same_verdict_on_every_case(corpus):
    differ = {}
    for m, folder in corpus:
        path = str(folder / "trace.json")
        threaded, plain = _threaded(path), _plain(path)
        if threaded != plain:
            differ[m.name] = (threaded, plain)
    assert differ == {}
    refused = sum(_plain(str(f / "trace.json")) is not None for _, f in corpus)
    assert refused >= 0.85 * len(corpus)
    # NOTE: no sidecar thread outlives its load (other tests may leave threads of their own)
    assert not [t for t in threading.enumerate() if t.name == "tpx_inspect sidecar"]


def _damage(folder: Path, edit) -> str:
    path = folder / "trace.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    return str(path)


def _bad_node(doc):
    doc["runs"][0]["structures"][0]["nodes"]["shape"]["values"][0] = [-1]


@pytest.mark.parametrize(
    "sidecar",
    ["missing", "from another capture", "file not a name", "bytes a string"],
)
def test_a_bad_document_is_reported_before_its_bad_sidecar(tmp_path, sidecar):
    folder = make_base(tmp_path / "base")
    path = _damage(folder, _bad_node)
    npz = folder / "trace.npz"
    if sidecar == "missing":
        npz.unlink()
    elif sidecar == "from another capture":
        npz.write_bytes(npz.read_bytes()[:-10])
    elif sidecar == "file not a name":
        _damage(folder, lambda d: d["sidecar"].update(file="../x.npz"))
    else:
        _damage(folder, lambda d: d["sidecar"].update(bytes="12"))
    message = _threaded(path)
    assert message is not None and "shape" in message and "less than the minimum 0" in message
    assert message == _plain(path)


def test_a_bad_sidecar_of_a_good_document_is_reported(tmp_path):
    folder = make_base(tmp_path / "base")
    path = str(folder / "trace.json")
    npz = folder / "trace.npz"
    npz.write_bytes(npz.read_bytes()[:-10])
    message = _threaded(path)
    assert message is not None and "does not match its trace" in message
    assert message == _plain(path)
    npz.unlink()
    assert "is missing" in _threaded(path) and _threaded(path) == _plain(path)


def test_a_load_without_a_thread_to_be_had(tmp_path, monkeypatch):
    folder = make_base(tmp_path / "base")
    path = str(folder / "trace.json")
    expected = tpx_inspect.load(path)

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(_trace_load.threading.Thread, "start", refuse)
    trace = tpx_inspect.load(path)
    assert [len(g.nodes) for g in trace.graphs] == [len(g.nodes) for g in expected.graphs]
    got, want = trace.graphs[0].tables.summaries, expected.graphs[0].tables.summaries
    assert np.array_equal(got, want, equal_nan=True)
    (folder / "trace.npz").unlink()
    assert "is missing" in _threaded(path)
