"""Trace node fields are declared once (tpx_inspect.nodes.Node, ``column()``): the node table's
columns, the JSON schema, the server's NodeInfo and the format version all derive from them or
are checked against them; a trace of a newer minor version loads and names what it ignored."""

from __future__ import annotations

import json
import warnings
from dataclasses import fields
from pathlib import Path

import pytest

import tpx_inspect
from tests.inspect._inspect_graphs import small_capture
from tpx_inspect import _version
from tpx_inspect._node_runs import RUN_FIELDS
from tpx_inspect.errors import TraceFormatError
from tpx_inspect.nodes import NODE_COLUMNS_DECLARED, Node
from tpx_inspect.server import models
from tpx_inspect.tables import NODE_FIELDS, OPTIONAL_NODE_FIELDS, NodeTable


def _schema(version: int = _version.FORMAT_VERSION[0]) -> dict:
    with open(tpx_inspect.schema_path(version), encoding="utf-8") as f:
        return json.load(f)


def test_columns_are_the_node_fields_in_order():
    declared = [f.name for f in fields(Node) if f.name != "id"]
    assert [f.name for f in NODE_COLUMNS_DECLARED] == declared
    assert (*NODE_FIELDS, *OPTIONAL_NODE_FIELDS) == tuple(declared)


@pytest.mark.parametrize("version", [1, 2])
def test_the_json_schema_declares_every_column(version):
    nodes = _schema(version)["$defs"]["nodes"]
    assert tuple(nodes["required"]) == NODE_FIELDS
    assert tuple(nodes["properties"]) == (*NODE_FIELDS, *OPTIONAL_NODE_FIELDS)
    # NOTE: version 2 stores the columns declared column(runs=True) as runs, and only those;
    # each run column's values are what version 1 allowed per entry
    runs = {k for k, v in nodes["properties"].items() if v.get("type") == "object"}
    assert runs == (set(RUN_FIELDS) if version == 2 else set())
    assert set(RUN_FIELDS) == {"kind", "op", "name", "label", "params", "scope", "source",
                               "shape", "dtype"}  # fmt: skip
    if version == 2:
        v1 = _schema(1)["$defs"]["nodes"]["properties"]
        for k in RUN_FIELDS:
            values = nodes["properties"][k]["properties"]["values"]
            assert values["type"] == "array" and values["items"] == v1[k]["items"], k


def test_the_schema_and_the_writer_use_the_one_version_constant(tmp_path):
    schema = _schema()
    assert schema["properties"]["version"]["const"] == _version.FORMAT_VERSION[0]
    path, _ = tpx_inspect.save(small_capture().trace, str(tmp_path / "t.json"))
    doc = json.loads(Path(path).read_text())
    assert {k: doc[k] for k in ("version", "minor") if k in doc} == _version.version_fields()


def test_node_table_round_trips_every_column():
    g = small_capture().trace.graphs[0]
    table = NodeTable.from_nodes(list(g.nodes))
    rebuilt = NodeTable({k: list(v) for k, v in table.columns.items()})
    assert list(rebuilt) == list(g.nodes)


def test_server_node_info_is_derived_from_the_columns():
    shown = {f.name for f in NODE_COLUMNS_DECLARED if f.metadata["column"][3] is not False}
    assert shown <= set(models.NodeInfo.model_fields)
    assert {"params", "saved"}.isdisjoint(models.NodeInfo.model_fields)
    n = small_capture().trace.graphs[0].nodes[-1]
    info = models.NodeInfo(id=n.id, **models.node_columns(n), title=n.title, saved_bytes=0,
                           order=None)  # fmt: skip
    assert info.source == str(n.source) and list(info.inputs[0].shape) == list(n.inputs[0].shape)


def _newer(tmp_path, minor: int, extra_column: bool):
    path, _ = tpx_inspect.save(small_capture().trace, str(tmp_path / "t.json"))
    doc = json.loads(Path(path).read_text())
    doc["minor"] = minor
    if extra_column:
        for run in doc["runs"]:
            for s in run["structures"]:
                s["nodes"]["color"] = ["red"] * len(s["nodes"]["inputs"])
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def test_a_newer_minor_version_loads_and_names_what_it_ignored(tmp_path):
    newer = _version.FORMAT_VERSION[1] + 1
    path = _newer(tmp_path, newer, extra_column=True)
    with pytest.warns(_version.TraceVersionWarning, match=rf"2\.{newer} is newer.*column 'color'"):
        trace = tpx_inspect.load(path)
    assert trace.graphs[0].nodes == small_capture().trace.graphs[0].nodes


def test_the_current_version_loads_without_a_warning(tmp_path):
    path = _newer(tmp_path, _version.FORMAT_VERSION[1], extra_column=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tpx_inspect.load(path)


def test_another_major_version_is_refused(tmp_path):
    path, _ = tpx_inspect.save(small_capture().trace, str(tmp_path / "t.json"))
    doc = json.loads(Path(path).read_text())
    doc["version"] = _version.FORMAT_VERSION[0] + 1
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(
        TraceFormatError, match=r"version 3 is not supported.*reads versions 1 and 2"
    ):
        tpx_inspect.load(path)


def test_a_reader_of_version_1_refuses_version_2_with_its_message(tmp_path, monkeypatch):
    """What tpx_inspect before format 2 says (its READS held only 1), and that version 1 is
    still written on request and loads."""
    path, _ = tpx_inspect.save(small_capture().trace, str(tmp_path / "t.json"))
    old, _ = tpx_inspect.save(small_capture().trace, str(tmp_path / "old.json"), version=1)
    monkeypatch.setattr(_version, "READS", {1: 0})
    message = (
        r"t\.json: trace format version 2 is not supported by this tpx_inspect \(it reads "
        r"versions 1\); re-capture the trace or upgrade tpx_inspect"
    )
    with pytest.raises(TraceFormatError, match=message):
        tpx_inspect.load(path)
    assert tpx_inspect.load(old).graphs[0].nodes == small_capture().trace.graphs[0].nodes
