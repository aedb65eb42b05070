"""The viewer's files (``web/``: the page, its stylesheet, its ~30 module scripts) served from
memory.

A fresh page asks for every module at once; the browser sends at most six requests at a time
to one server, so the page loads in waves. Starlette's ``StaticFiles`` looks each file up and
reads it through worker threads (several thread hops per file, each waiting for the
interpreter lock while the server reads a trace): 0.5-1 s for the whole page on a loaded
machine. Here each file is read once (again when its size or modification time changes) and
answered from the event loop, with an ``ETag`` and ``Cache-Control: no-cache`` (a browser
revalidates and gets ``304 Not Modified``; a changed viewer is never mixed with a cached one).
Anything else (a path outside the folder, a folder, a missing file) goes to ``StaticFiles``.

>>> from pathlib import Path
>>> from fastapi import FastAPI
>>> from fastapi.testclient import TestClient
>>> from tpx_inspect.server.app import WEB_DIR
>>> app = FastAPI()
>>> app.mount("/", WebFiles(directory=WEB_DIR, html=True))
>>> r = TestClient(app).get("/js/main.js")
>>> r.status_code, r.headers["content-type"], r.headers["cache-control"]
(200, 'text/javascript; charset=utf-8', 'no-cache')
>>> TestClient(app).get("/js/main.js", headers={"If-None-Match": r.headers["etag"]}).status_code
304
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
from typing import Any

from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.responses import Response

__all__ = ["WebFiles"]

_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".json": "application/json"}  # fmt: skip
_MOST = 4 << 20  # NOTE: bigger files (none in web/) are streamed by StaticFiles


class WebFiles(StaticFiles):
    """``StaticFiles`` answering the small files of its folder from memory (see the module)."""

    def __init__(self, *, directory: str | os.PathLike[str], html: bool = False) -> None:
        super().__init__(directory=directory, html=html)
        self.root = os.path.realpath(directory)
        self.kept: dict[str, tuple[tuple[int, int], bytes, str, str]] = {}

    async def get_response(self, path: str, scope: Any) -> Response:
        if scope["method"] in ("GET", "HEAD"):
            name = "index.html" if path == "." and self.html else path
            hit = self._file(name)
            if hit is not None:
                return _answer(hit, Headers(scope=scope))
        return await super().get_response(path, scope)

    def _file(self, name: str) -> tuple[tuple[int, int], bytes, str, str] | None:
        """The file ``name`` of the folder (read now if new or changed), or None when it is
        not a small regular file inside the folder."""
        full = os.path.realpath(os.path.join(self.root, name))
        if os.path.commonpath([full, self.root]) != self.root:
            return None
        try:
            st = os.stat(full)
        except (OSError, ValueError):
            return None
        if not os.path.isfile(full) or st.st_size > _MOST:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        hit = self.kept.get(name)
        if hit is None or hit[0] != stamp:
            with open(full, "rb") as f:
                body = f.read()
            ext = os.path.splitext(name)[1]
            kind = _TYPES.get(ext) or mimetypes.guess_type(name)[0] or "application/octet-stream"
            etag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'
            hit = (stamp, body, kind, etag)
            self.kept[name] = hit
        return hit


def _answer(hit: tuple[tuple[int, int], bytes, str, str], request: Headers) -> Response:
    _, body, kind, etag = hit
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    tags = [t.strip().removeprefix("W/") for t in request.get("if-none-match", "").split(",")]
    if etag in tags:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=kind, headers=headers)
