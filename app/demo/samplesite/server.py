"""The sample website's HTTP server: virtual hosts by Host header on one loopback port.

Why a home-made server: demos and crawler tests need a site whose every byte is known (so a
test can compare WARC payload digests with what was served), with the awkward cases an archival
crawler must survive (gzip, chunked, repeated Set-Cookie, redirects, traps), reached without
DNS. ``http.server`` is enough for that and adds no dependency.

Static files live in ``sites/<host>/``; text files may contain ``__PORT__``, replaced by the port
the server listens on so that absolute cross-host links work on a random port. Every request is
appended to :attr:`SampleSiteServer.requests` (host, path, timings, status, SHA-1 of the entity
sent) so that tests can measure politeness gaps and digests at the server.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import socket
import threading
import time
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from app.demo.samplesite import routes
from app.demo.samplesite.routes import SITES_DIR, Reply, load_static

log = logging.getLogger(__name__)


@dataclass
class ServedRequest:
    """One request as the server saw it (what politeness and digest tests measure)."""

    host: str
    path: str
    method: str
    headers: list[tuple[str, str]]
    started: float  # time.monotonic() when the request line was read
    ended: float = 0.0  # time.monotonic() when the last byte was written
    wall_started: float = 0.0  # time.time() at start
    status: int = 0
    sha1: str = ""  # hex SHA-1 of the entity sent (after content coding, before chunking)
    length: int = 0
    content_encoding: str = ""
    chunked: bool = False

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


class SampleSiteServer(ThreadingHTTPServer):
    """Threaded server holding the request log."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.requests: list[ServedRequest] = []
        self.lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a crawler's timeout) is normal here, not a traceback."""
        log.debug("samplesite: client %s went away", client_address)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "harvestflow-samplesite/0.1"
    server: SampleSiteServer

    def setup(self) -> None:
        super().setup()
        # headers and body are separate writes: without TCP_NODELAY, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every keep-alive response
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("samplesite: " + format, *args)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    def _serve(self, head: bool) -> None:
        started = time.monotonic()
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        entry = ServedRequest(
            host=host,
            path=self.path,
            method=self.command,
            headers=list(self.headers.items()),
            started=started,
            wall_started=time.time(),
        )
        try:
            reply = self._route(host)
        except Exception:  # a bug in a route must not kill the server thread silently
            log.exception("samplesite: route failed for %s%s", host, self.path)
            reply = Reply(500, b"internal error\n", [("Content-Type", "text/plain")])
        if reply.delay_s:
            time.sleep(reply.delay_s)
        entity = b"".join(reply.chunks) if reply.chunks is not None else reply.body
        entry.status = reply.status
        entry.sha1 = hashlib.sha1(entity).hexdigest()
        entry.length = len(entity)
        entry.content_encoding = dict((k.lower(), v) for k, v in reply.headers).get(
            "content-encoding", ""
        )
        entry.chunked = reply.chunks is not None and not head
        with self.server.lock:  # logged before sending: a client may look as soon as it reads
            self.server.requests.append(entry)
        self.send_response(reply.status)
        for key, value in reply.headers:
            self.send_header(key, value)
        if reply.chunks is not None and not head:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in reply.chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(entity)))
            self.end_headers()
            if not head and reply.status not in (204, 304):
                self.wfile.write(entity)
        self.wfile.flush()
        entry.ended = time.monotonic()

    def _route(self, host: str) -> Reply:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        port = self.server.port
        dynamic = routes.dynamic(host, parts.path, query, dict(self.headers.items()), port)
        if dynamic is not None:
            return dynamic
        found = load_static(host, parts.path, port)
        if found is None:
            # a directory without its slash: redirect like Apache does
            slashless = not parts.path.endswith("/")
            if slashless and (SITES_DIR / host / parts.path.lstrip("/")).is_dir():
                return Reply(301, b"", [("Location", parts.path + "/")])
            body = b"<!DOCTYPE html><title>404 Not Found</title><h1>Not Found</h1>\n"
            return Reply(404, body, [("Content-Type", "text/html; charset=utf-8")])
        data, ctype = found
        headers = [("Content-Type", ctype), ("Last-Modified", formatdate(0, usegmt=True))]
        if host == "www.example-a.test" and parts.path == "/gzip.html":
            # pre-compressed with a fixed mtime so that the bytes (and digest) are stable
            data = gzip.compress(data, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
            headers.append(("Vary", "Accept-Encoding"))
        if host == "www.example-a.test" and parts.path == "/chunked.html":
            size = max(1, len(data) // 4)
            chunks = [data[i : i + size] for i in range(0, len(data), size)]
            return Reply(200, headers=headers, chunks=chunks)
        return Reply(200, data, headers)
