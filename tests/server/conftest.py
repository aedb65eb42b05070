"""Run folders for the server tests: a scoped two-step run, a run with a NaN, a broken one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

import tpx as tp
import tpx_inspect
from tpx_inspect.server import Settings, create_app


def scoped_run(folder: Path, steps: int = 2) -> Path:
    """Two steps of a tiny scoped model (enc.fc1, enc.fc2, head), every value kept."""
    w1 = tp.asarray([[0.5, -1.0, 0.25], [1.5, 0.5, -0.5]], requires_grad=True)
    w2 = tp.asarray([[1.0], [-2.0], [0.5]], requires_grad=True)
    with tpx_inspect.capture("all", values="all", timing=False, params={"w1": w1, "w2": w2}) as cap:
        for step in range(steps):
            x = tp.asarray([[1.0, 2.0], [3.0, -1.0]]) * (step + 1)
            with tp.scope("enc"):
                with tp.scope("fc1"):
                    h = (x @ w1).relu()
                with tp.scope("fc2"):
                    h = (h @ w2).tanh()
            with tp.scope("head"):
                loss = (h * h).mean()
            loss.backward()
    folder.mkdir(parents=True, exist_ok=True)
    cap.save(str(folder / "trace.json"))
    return folder


def nan_run(folder: Path) -> Path:
    """One graph whose forward makes a NaN (log of a negative number)."""
    with np.errstate(invalid="ignore"), tpx_inspect.capture("all", values="all") as cap:
        x = tp.asarray([1.0, -1.0, 2.0], requires_grad=True)
        (x.log() * 2).sum().backward()
    folder.mkdir(parents=True, exist_ok=True)
    cap.save(str(folder / "trace.json"))
    return folder


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    scoped_run(root / "scoped")
    nan_run(root / "nan")
    broken = root / "broken"
    broken.mkdir()
    (broken / "trace.json").write_text('{"format": "tpx_inspect.trace", "version": 1, "ru')
    return root


@pytest.fixture(scope="session")
def app(runs_dir: Path):
    # a generous dot timeout: on a loaded 2-core machine the test must not see the fallback
    return create_app([runs_dir], settings=Settings(layout_timeout=30.0))


@pytest.fixture(scope="session")
def client(app) -> TestClient:
    return TestClient(app)


@pytest.fixture(scope="session")
def fallback_client(runs_dir: Path) -> TestClient:
    """A server whose layout never runs Graphviz."""
    return TestClient(create_app([runs_dir], settings=Settings(dot=None)))
