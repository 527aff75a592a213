"""The gateway's request limits, as a production reverse proxy sets them (nginx's defaults).

Why apart from :mod:`access.gateway`: the gateway decides and forwards; these only bound what a
client may send: the whole request within ``client_timeout_s`` of the connection, a body of at
most ``max_body_bytes`` with one readable ``Content-Length`` (never chunked), refused before it
is read. Mixed into the gateway's request handler.
"""

from __future__ import annotations

import io
import logging
import re
import socket
import time
from typing import TYPE_CHECKING, Any, Protocol

from access.config import AccessConfig

log = logging.getLogger(__name__)

CHUNK = 1 << 16
_LINGER_S = 2.0  # after refusing a body: how long its bytes are read and dropped, then close


class _Deadline(io.RawIOBase):
    """The client's socket as the request's reader: every read ends by one deadline.

    Why not just a socket timeout: it bounds each read, and a client trickling a byte at a time
    would hold a thread for ever; here the request line, headers and body must all have
    arrived ``client_timeout_s`` after the connection was accepted (or it is closed).
    """

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.sock = sock
        self.deadline = time.monotonic() + seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class Limited(Protocol):
    """What these limits need of the gateway (:class:`access.gateway.Gateway`)."""

    cfg: AccessConfig


class RequestLimits:
    """Deadline and body limits, for the gateway's request handler (a BaseHTTPRequestHandler)."""

    gateway: Limited
    headers: Any
    path: str
    command: str
    client_address: Any
    connection: socket.socket
    rfile: Any
    wfile: Any
    timeout: float | None

    if TYPE_CHECKING:  # the handler's own

        def _page(self, status: int, title: str, message: str) -> None: ...

    def setup(self) -> None:
        super().setup()  # type: ignore[misc]
        self.rfile.close()  # the socket's own reader: ours replaces it (the socket stays open)
        self.rfile = io.BufferedReader(_Deadline(self.connection, self.timeout or 60.0))

    def handle_expect_100(self) -> bool:
        """``Expect: 100-continue``: a body we would refuse is refused before it is sent."""
        if self._body_refused():
            return False
        return super().handle_expect_100()  # type: ignore[misc]

    def _body_refused(self) -> bool:
        """Refuse (and answer) a request whose body is unreadable or too big, before reading it:
        one readable ``Content-Length`` of at most ``max_body_bytes``, no chunked body."""
        limit = self.gateway.cfg.max_body_bytes
        lengths = set(self.headers.get_all("Content-Length") or [])
        if self.headers.get("Transfer-Encoding"):
            status, why = 411, "a request body must be sent with a Content-Length, not chunked"
        elif len(lengths) > 1:
            status, why = 400, "the request has several different Content-Length headers"
        elif lengths and not re.fullmatch(r"\s*\d{1,30}\s*", next(iter(lengths))):
            status, why = 400, f"Content-Length {next(iter(lengths))[:40]!r} is not a number"
        elif lengths and int(next(iter(lengths))) > limit:
            status, why = 413, f"a request body may hold at most {limit} bytes"
        else:
            return False
        log.info("gateway: %s %s from %s: %s", self.command, self.path, self.client_address[0], why)
        self._page(status, "request_refused", why)
        self._linger()
        return True

    def _linger(self) -> None:
        """After refusing a body: stop sending, read and drop what the client still sends for a
        moment (closing with unread bytes would reset the connection and lose our answer)."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(0.5)
            until = time.monotonic() + _LINGER_S
            while time.monotonic() < until and self.connection.recv(CHUNK):
                pass
        except OSError:
            pass
