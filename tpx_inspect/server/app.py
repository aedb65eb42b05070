"""The app factory: ``create_app(run_dirs)`` builds the FastAPI app over some run folders.

Routers hold the endpoints; errors of the library become JSON bodies here (unknown ids 404,
unreadable traces and impossible exports 409); the viewer in ``web/`` is served at ``/``.
CORS is off unless origins are given. Nothing here executes user code or unpickles anything.

>>> from fastapi.testclient import TestClient
>>> client = TestClient(create_app([]))
>>> client.get("/api/runs").json()
[]
>>> client.get("/api/runs/nope").status_code
404
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse

import tpx_inspect
from tpx_inspect.errors import InspectError
from tpx_inspect.server.activity import Activity, Tracked
from tpx_inspect.server.deps import LayoutCache, Settings
from tpx_inspect.server.guard import Guard
from tpx_inspect.server.jobs import Cancelled, JobPool, UnknownJob
from tpx_inspect.server.models import ErrorBody
from tpx_inspect.server.routers import diff, graphs, jobs, runs, viewmodel
from tpx_inspect.server.store import RunStore, UnknownId
from tpx_inspect.server.webfiles import WebFiles

__all__ = ["WEB_DIR", "create_app"]

WEB_DIR = Path(tpx_inspect.__file__).parent / "web"
"""The viewer's files: ``tpx_inspect/web`` (in a checkout, a link to the repository's web/)."""

PLACEHOLDER = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tpx-inspect</title></head>
<body><h1>tpx-inspect</h1><p>The viewer is not installed. The API is at
<a href="/api/runs">/api/runs</a>; its documentation at <a href="/docs">/docs</a>.</p>
</body></html>
"""


COMMON_RESPONSES: dict[int | str, dict] = {
    403: {"model": ErrorBody, "description": "the Host header names another server"},
    409: {"model": ErrorBody, "description": "the run's trace is unreadable"},
    413: {"model": ErrorBody, "description": "the request body is too large"},
    414: {"model": ErrorBody, "description": "the URL is too long"},
}
"""Answers any endpoint may give, documented in the OpenAPI schema of every route."""


def _error(status: int):
    def handler(request: Request, exc: Exception) -> JSONResponse:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return JSONResponse({"detail": text}, status_code=status)

    return handler


def create_app(
    run_dirs: Sequence[str | os.PathLike[str]] = (),
    *,
    store: RunStore | None = None,
    settings: Settings | None = None,
    web_dir: str | os.PathLike[str] | None = None,
    cors_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] | None = None,
) -> FastAPI:
    """The tpx-inspect app over ``run_dirs`` (run folders, or folders of run folders).

    ``store`` replaces the store built from ``run_dirs`` (``run --serve`` passes one holding
    its live capture); ``settings`` sets the layout binary and timeout; ``web_dir`` the
    viewer's folder; ``cors_origins`` turns CORS on for those origins only;
    ``allowed_hosts`` the names a request's ``Host`` may give (None: any; ``tpx-inspect
    serve`` passes those of the address it binds, see :func:`~tpx_inspect.server.guard.hosts_for`).
    """
    app = FastAPI(title="tpx-inspect", version=tpx_inspect.__dict__.get("__version__", "0.1.0"),
                  description="Browse, check and export captured TPX autograd graphs.")  # fmt: skip
    app.state.store = store if store is not None else RunStore(list(run_dirs))
    app.state.settings = settings or Settings()
    app.state.cache = LayoutCache(app.state.settings.cache_size)
    app.state.jobs = JobPool(app.state.settings.job_workers)
    app.state.vm_models, app.state.vm_states = viewmodel.Models(), viewmodel.States()
    app.add_exception_handler(UnknownId, _error(404))
    app.add_exception_handler(UnknownJob, _error(404))
    app.add_exception_handler(InspectError, _error(409))
    app.add_exception_handler(Cancelled, _error(409))
    for r in (runs.router, graphs.router, viewmodel.router, diff.router, jobs.router):
        app.include_router(r, responses=COMMON_RESPONSES)
    if cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(cors_origins), allow_methods=["GET"])
    app.state.activity = Activity()  # NOTE: work done ahead waits for a quiet moment
    app.add_middleware(Tracked, activity=app.state.activity)
    app.add_middleware(Guard, allowed_hosts=allowed_hosts)  # NOTE: added last: outermost
    _mount_web(app, Path(web_dir) if web_dir is not None else WEB_DIR)
    return app


def _mount_web(app: FastAPI, web: Path) -> None:
    if (web / "index.html").is_file():
        app.mount("/", WebFiles(directory=web, html=True), name="web")
        return

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def placeholder() -> str:
        return PLACEHOLDER
