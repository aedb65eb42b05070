"""What every request passes before a router sees it: the ``Host`` check (a web page that
rebinds its own DNS name to 127.0.0.1 must not read the traces), size limits answered with
414/413 and a JSON body, and ``HEAD`` answered as ``GET`` without the body.

``allowed_hosts`` lists the names a request may use in ``Host``; ``hosts_for(bind)`` gives
them for the address the server binds: that address, plus the loopback names when it binds
loopback, plus any IP literal when it binds every interface (an IP literal cannot be rebound);
``--allow-host NAME`` adds a name (for a reverse proxy), ``*`` turns the check off.

>>> hosts_for("127.0.0.1")
('127.0.0.1', '::1', 'localhost')
>>> host_allowed("evil.example:8000", hosts_for("127.0.0.1")), host_allowed("[::1]:80", ("::1",))
(False, True)
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["ANY_IP", "MAX_BODY", "MAX_URL", "Guard", "host_allowed", "hosts_for"]

MAX_URL = 64 * 1024
"""Longest path plus query string accepted (bytes); longer ones get 414."""

MAX_BODY = 1024 * 1024
"""Largest request body accepted (bytes); the API reads none, larger ones get 413."""

ANY_IP = "<any IP address>"
LOOPBACK = ("127.0.0.1", "::1", "localhost")
_WILDCARD = ("0.0.0.0", "::", "")


def hosts_for(bind: str, extra: Sequence[str] = ()) -> tuple[str, ...] | None:
    """The ``Host`` names accepted by a server bound to ``bind`` (None: every name)."""
    extra = tuple(e.strip().lower().rstrip(".") for e in extra)
    if "*" in extra:
        return None
    bind = bind.strip("[]").lower()
    names = set(extra)
    if bind in _WILDCARD:
        names.update((*LOOPBACK, ANY_IP))
    else:
        names.add(bind)
    if bind in LOOPBACK or bind.startswith("127."):
        names.update(LOOPBACK)
    return tuple(sorted(names))


def _hostname(header: str) -> str:
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:8000
        return header[1 : header.find("]")] if "]" in header else header
    name, sep, port = header.rpartition(":")
    return (name if sep and port.isdigit() else header).rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_allowed(header: str, allowed: Sequence[str] | None) -> bool:
    """True when the ``Host`` header ``header`` names one of ``allowed`` (None: any)."""
    if allowed is None:
        return True
    name = _hostname(header)
    return name in allowed or (ANY_IP in allowed and _is_ip(name))


class Guard:
    """ASGI middleware: Host check, 414/413 limits, HEAD as GET without a body."""

    def __init__(
        self,
        app: Any,
        allowed_hosts: Sequence[str] | None = None,
        max_url: int = MAX_URL,
        max_body: int = MAX_BODY,
    ) -> None:
        self.app = app
        self.allowed = None if allowed_hosts is None else tuple(allowed_hosts)
        self.max_url, self.max_body = max_url, max_body

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        if scope["method"] == "HEAD":
            await self.app({**scope, "method": "GET"}, receive, _without_body(send))
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: dict) -> tuple[int, str] | None:
        url = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        if url > self.max_url:
            return 414, f"the URL has {url} bytes, more than {self.max_url}"
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not host_allowed(host, self.allowed):
            return 403, (
                f"this server does not answer to the host {host[:60]!r} (DNS rebinding "
                "defence); start it with --allow-host NAME to use another name"
            )
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.max_body:
            return 413, f"the request body is larger than {self.max_body} bytes"
        return None


async def _answer(send: Any, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _without_body(send: Any) -> Any:
    async def send_head(message: dict) -> None:
        if message["type"] == "http.response.body":
            if message.get("more_body"):
                return  # NOTE: a streamed body is dropped; the headers already went out
            message = {"type": "http.response.body", "body": b""}
        await send(message)

    return send_head
