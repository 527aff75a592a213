"""A loopback server whose responses a test writes byte for byte (status line, header lines,
body), for hostile headers no well-behaved framework would send.

Routes map ``(host, path)`` — or ``(None, path)`` for any host — to a :class:`Raw` response;
a path is matched as the client sent it on the request line (query included). Every request is
recorded. Each connection is closed after one response and has a socket timeout, so a test can
never hang on it.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Raw:
    """One response: header lines are written as given (``name: value`` bytes, no CRLF)."""

    body: bytes = b""
    headers: list[bytes] = field(default_factory=list)
    status: int = 200
    hang_up: bool = False  # the connection closed without an answer (a flaky server)


@dataclass
class RawSite:
    port: int
    requests: list[tuple[str, str]]  # (host without port, request-line target; "POST <target>")

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"


Routes = dict[tuple[str | None, str], Raw] | Callable[[str, str], Raw | None]
# (path, the route's response, the request's headers) → the response as sent: content
# negotiation, as a production server does it (scriptsite.compressed: Accept-Encoding)
Negotiate = Callable[[str, Raw, Message], Raw]


@contextmanager
def serve(
    routes: Routes, tls: ssl.SSLContext | None = None, negotiate: Negotiate | None = None
) -> Iterator[RawSite]:
    """Serve ``routes`` on 127.0.0.1 (a free port) for the ``with`` block (over TLS with
    ``tls``, a server context; each response passed through ``negotiate`` when given)."""
    requests: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"
        timeout = 10

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            """Read the body, then answer as a GET does; logged as ``"POST <target>"``."""
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.do_GET(method="POST ")

        def do_GET(self, method: str = "") -> None:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
            requests.append((host, method + self.path))
            if callable(routes):
                raw = routes(host, self.path)
            else:
                raw = routes.get((host, self.path)) or routes.get((None, self.path))
            if raw is None:
                raw = Raw(b"not here", [b"Content-Type: text/plain"], 404)
            elif raw.hang_up:
                self.close_connection = True
                return
            elif negotiate is not None:
                raw = negotiate(self.path, raw, self.headers)
            head = f"HTTP/1.0 {raw.status} X\r\n".encode()
            head += b"".join(h + b"\r\n" for h in raw.headers)
            head += b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(raw.body)
            with suppress(OSError):  # the client hung up: nothing to answer
                self.wfile.write(head + raw.body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="rawsite", daemon=True)
    thread.start()
    try:
        yield RawSite(server.server_address[1], requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
