"""The viewer's files (``web/``: the page, its stylesheet, its ~30 module scripts) served from
memory, under versioned URLs.

A fresh page asks for every module at once; the browser sends at most six requests at a time
to one server, so the page loads in waves. Starlette's ``StaticFiles`` looks each file up and
reads it through worker threads (several thread hops per file, each waiting for the
interpreter lock while the server reads a trace). Here each file is read once (again when its
size or modification time changes) and answered from the event loop.

Caching: the page (``/``) names its scripts and stylesheet under ``v/<version>/`` (a digest of
the folder's files), so they are answered with ``Cache-Control: immutable``: a page opened
again, also from a later server of the same viewer, asks for no script at all, and a changed
viewer has other URLs, never mixed with cached ones. The page itself and unversioned paths get
an ``ETag`` and ``no-cache`` (revalidated: ``304 Not Modified``). Anything else (a path
outside the folder, a folder, a missing file) goes to ``StaticFiles``.

>>> from pathlib import Path
>>> from fastapi import FastAPI
>>> from fastapi.testclient import TestClient
>>> from tpx_inspect.server.app import WEB_DIR
>>> app = FastAPI()
>>> app.mount("/", WebFiles(directory=WEB_DIR, html=True))
>>> page = TestClient(app).get("/").text
>>> script = page.split('<script type="module" src="')[1].split('"')[0]
>>> script.startswith("v/") and script.endswith("/js/main.js")
True
>>> TestClient(app).get("/" + script).headers["cache-control"]
'public, max-age=31536000, immutable'
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

from fastapi.datastructures import Headers
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

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
            parts = path.split(os.sep)
            headers = Headers(scope=scope)
            if len(parts) > 2 and parts[0] == "v":  # NOTE: v/<version>/<file>
                hit = self._file(os.path.join(*parts[2:]))
                if hit is not None:
                    fixed = parts[1] == self.version()
                    return _answer(hit, headers, IMMUTABLE if fixed else NO_CACHE)
            elif path in (".", "index.html") and self.html:
                hit = self._page()
                if hit is not None:
                    return _answer(hit, headers, NO_CACHE)
            else:
                hit = self._file(path)
                if hit is not None:
                    return _answer(hit, headers, NO_CACHE)
        return await super().get_response(path, scope)

    def version(self) -> str:
        """A digest of the folder's files (their names, sizes and modification times)."""
        h = hashlib.blake2b(digest_size=6)
        for top, dirs, files in os.walk(self.root):
            dirs.sort()
            for name in sorted(files):
                try:
                    st = os.stat(os.path.join(top, name))
                except OSError:  # NOTE: a dangling link: not served, not part of the version
                    continue
                h.update(f"{os.path.join(top, name)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        return h.hexdigest()

    def _page(self) -> tuple[tuple[int, int], bytes, str, str] | None:
        """index.html naming its scripts and stylesheet under ``v/<version>/``."""
        hit = self._file("index.html")
        if hit is None:
            return None
        ver = self.version()
        page = self.kept.get(f"page:{ver}")
        if page is None or page[0] != hit[0]:
            text = hit[1].decode()
            for attr in ('src="', 'href="'):
                text = text.replace(f"{attr}js/", f"{attr}v/{ver}/js/")
            text = text.replace('href="style.css"', f'href="v/{ver}/style.css"')
            body = text.encode()
            etag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'
            page = (hit[0], body, hit[2], etag)
            self.kept[f"page:{ver}"] = page
        return page

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


IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"


def _answer(hit: tuple[tuple[int, int], bytes, str, str], request: Headers, cache: str) -> Response:
    _, body, kind, etag = hit
    headers = {"ETag": etag, "Cache-Control": cache}
    tags = [t.strip().removeprefix("W/") for t in request.get("if-none-match", "").split(",")]
    if etag in tags:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=kind, headers=headers)
