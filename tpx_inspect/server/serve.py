"""Run the app with uvicorn on a socket bound here, so that port 0 works (the kernel picks a
free port and the URL printed names it) and a busy port gives a clear error.

>>> sock = bind("127.0.0.1", 0)
>>> url_of(sock).startswith("http://127.0.0.1:")
True
>>> sock.close()
"""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import threading
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from tpx_inspect.server.guard import MAX_URL

__all__ = ["LOCAL_HOSTS", "PortInUse", "ServerThread", "bind", "serve_forever", "url_of", "warm"]

MAX_HEAD = 1024 * 1024
"""Largest request head (request line and headers) read before answering (bytes): URLs up to
this size reach the app, which answers 414 past ``guard.MAX_URL``, instead of a reset."""

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class PortInUse(OSError):
    """The port asked for is taken by another program."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(
                f"port {port} on {host} is already in use; pick another with --port "
                "(--port 0 picks a free one)"
            ) from None
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """The ``http://host:port/`` URL of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering a request head past ``MAX_HEAD`` with 414 (a long
    request line) or 431 (long headers) and a JSON body instead of a bare 400."""

    def send_400_response(self, msg: str) -> None:
        pending = self.conn.trailing_data[0]
        if len(pending) < MAX_HEAD:
            super().send_400_response(msg)
            return
        end = pending.find(b"\r\n")
        status = 414 if end < 0 or end > MAX_URL else 431
        body = json.dumps({"detail": f"the request head is larger than {MAX_HEAD} bytes"})
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        for event in (h11.Response(status_code=status, headers=headers),
                      h11.Data(data=body.encode()), h11.EndOfMessage()):  # fmt: skip
            self.transport.write(self.conn.send(event))
        self.transport.close()


def _server(app: Any) -> uvicorn.Server:
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", http=_Protocol,
        h11_max_incomplete_event_size=MAX_HEAD,
    )  # fmt: skip
    return uvicorn.Server(config)


def warm(app: Any) -> None:
    """Answer one request inside the process before serving (a path nothing serves), so that
    what the framework prepares on its first request (route state for every endpoint, the
    event loop backend's imports: ~0.8 s) is done before a person's first page load.

    >>> from tpx_inspect.server import create_app
    >>> warm(create_app([]))
    """

    async def run() -> None:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
            "scheme": "http", "path": "/api/-warm-", "raw_path": b"/api/-warm-",
            "query_string": b"", "root_path": "", "headers": [(b"host", b"127.0.0.1")],
            "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 80),
        }  # fmt: skip

        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict) -> None:
            pass

        await app(scope, receive, send)

    # NOTE: a thread of its own: the caller may be inside a running event loop
    thread = threading.Thread(target=asyncio.run, args=(run(),), name="tpx-inspect-warm")
    thread.start()
    thread.join()


def serve_forever(app: Any, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` in this thread until interrupted (Ctrl-C)."""
    warm(app)
    _server(app).run(sockets=[sock])


class ServerThread:
    """Serve ``app`` on ``sock`` from a daemon thread (``run --serve`` runs the script meanwhile).

    >>> from tpx_inspect.server import create_app
    >>> t = ServerThread(create_app([]), bind("127.0.0.1", 0)).start()
    >>> t.stop()
    """

    def __init__(self, app: Any, sock: socket.socket) -> None:
        self.sock = sock
        self.server = _server(app)
        self.thread = threading.Thread(target=self._run, name="tpx-inspect-server", daemon=True)

    def _run(self) -> None:
        self.server.run(sockets=[self.sock])

    def start(self) -> ServerThread:
        """Start serving (once the app is warm, see :func:`warm`); returns self."""
        warm(self.server.config.app)
        self.thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the server to finish and wait for its thread (at most ``timeout`` seconds)."""
        self.server.should_exit = True
        self.thread.join(timeout)
        self.sock.close()

    @property
    def url(self) -> str:
        """The URL the server answers on."""
        return url_of(self.sock)
