"""A small loopback web server for crawler tests that need pages the sample site lacks.

Each test gives a handler ``(request) -> Reply | None`` (None: 404); virtual hosts are told
apart by the Host header and reached through the crawl's ``resolve`` map, like the sample site.
Every request served is kept (method, host, path, headers, body) for the test to inspect.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass
class Served:
    method: str
    host: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


Handler = Callable[[Served], Reply | None]


class MiniSite:
    """A running server: ``url(host, path)``, ``resolve_map()``, ``served``, ``stop()``."""

    def __init__(
        self, handler: Handler, hosts: tuple[str, ...], *, port: int = 0, keep: bool = True
    ) -> None:
        """Serve ``handler`` on 127.0.0.1:``port`` (0: any); ``keep=False`` keeps no request
        (a benchmark's site serving hundreds of thousands)."""
        self.hosts = hosts
        self.served: list[Served] = []
        site = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                req = Served(
                    self.command,
                    (self.headers.get("Host") or "").split(":")[0],
                    parts.path,
                    parts.query,
                    {k: v for k, v in self.headers.items()},
                    body,
                )
                if keep:
                    site.served.append(req)
                reply = handler(req) or Reply(404, b"not found", [("Content-Type", "text/plain")])
                self.send_response(reply.status)
                for k, v in reply.headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = _serve
            do_POST = _serve
            do_HEAD = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", port), _H)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def resolve_map(self) -> dict[str, str]:
        return {h: "127.0.0.1" for h in self.hosts}

    def paths(self, host: str) -> list[str]:
        return [s.path for s in list(self.served) if s.host == host]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
