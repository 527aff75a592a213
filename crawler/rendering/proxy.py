"""The HTTP proxy a rendering tab's requests go through (one listener per tab).

Why our own proxy and not warcprox: what the browser asks for must go through the crawl's own
fetch path (capture middleware, host mapping, robots, politeness, budgets, seen-set), into the
job's WARCs; warcprox would fetch outside those rules and write WARCs of its own. HTTPS is
intercepted with the job's CA (:mod:`crawler.rendering.tls`); a media range request is answered
from the whole resource, fetched and archived once (:func:`ranged`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# headers that belong to one connection (RFC 9110 §7.6.1) or to the proxy, never forwarded
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
MAX_HEAD = 256 * 1024
MAX_BODY = 16 * 1024 * 1024
# request headers asking for part of a resource: never sent on, the crawl fetches it whole
RANGE_HEADERS = frozenset({"range", "if-range"})
_ONE_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)


@dataclass
class ProxyRequest:
    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes = b""


@dataclass
class ProxyResponse:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    reason: str = "OK"


Handler = Callable[[ProxyRequest], Awaitable[ProxyResponse]]


class TabProxy:
    """An HTTP/1.1 forward proxy on 127.0.0.1 whose requests go to ``handler``."""

    def __init__(
        self, handler: Handler, tls_for: Callable[[str], ssl.SSLContext] | None = None
    ) -> None:
        self.handler = handler
        self.tls_for = tls_for
        self.server: asyncio.Server | None = None
        self.port = 0
        self.in_flight = 0
        self.last_activity = 0.0
        self.errors: list[str] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)

    def _touch(self) -> None:
        self.last_activity = asyncio.get_running_loop().time()

    async def _read_request(self, reader: asyncio.StreamReader) -> ProxyRequest | None:
        line = await reader.readline()
        if not line.strip():
            return None
        parts = line.decode("latin-1").split()
        if len(parts) != 3:
            raise ValueError(f"bad request line {line[:80]!r}")
        method, target, _version = parts
        headers: list[tuple[str, str]] = []
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        lower = {k.lower(): v for k, v in headers}
        body = b""
        if "chunked" in lower.get("transfer-encoding", "").lower():
            chunks = []
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    await reader.readline()
                    break
                chunks.append(await reader.readexactly(size))
                await reader.readline()
                if sum(map(len, chunks)) > MAX_BODY:
                    raise ValueError("request body too large")
            body = b"".join(chunks)
        elif lower.get("content-length"):
            length = int(lower["content-length"])
            if length > MAX_BODY:
                raise ValueError("request body too large")
            body = await reader.readexactly(length)
        return ProxyRequest(method.upper(), target, headers, body)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        origin = ""  # "https://host:port" inside a CONNECT tunnel
        try:
            while True:
                try:
                    request = await asyncio.wait_for(self._read_request(reader), 120)
                except (TimeoutError, ValueError, asyncio.IncompleteReadError) as exc:
                    log.debug("proxy: unreadable request: %s", exc)
                    break
                if request is None:
                    break
                if request.method == "CONNECT":
                    if origin or not await self._tunnel(request.url, writer):
                        break
                    origin = _https_origin(request.url)
                    continue
                if origin and request.url.startswith("/"):
                    request.url = origin + request.url
                self.in_flight += 1
                self._touch()
                try:
                    response = await self.handler(request)
                except Exception as exc:  # one failed resource never stops the page
                    log.warning("proxy: %s %s failed: %s", request.method, request.url, exc)
                    response = ProxyResponse(502, [("Content-Type", "text/plain")], b"", "Error")
                finally:
                    self.in_flight -= 1
                    self._touch()
                writer.write(_head(response) + response.body)
                await writer.drain()
        except (ConnectionError, OSError, ssl.SSLError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _tunnel(self, authority: str, writer: asyncio.StreamWriter) -> bool:
        """Accept a ``CONNECT`` and end its TLS here (False: refused, connection to close)."""
        host = authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority
        host = host.strip("[]") if host.startswith("[") else host
        if self.tls_for is None or not host:
            self.errors.append(f"https not intercepted: {authority}")
            writer.write(b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return False
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        await asyncio.wait_for(writer.start_tls(self.tls_for(host)), 30)
        return True


def ranged(request: ProxyRequest, response: ProxyResponse) -> ProxyResponse:
    """What the browser asked for of a full response: the byte range of its ``Range`` header
    (206 with ``Content-Range``, or 416 when it lies past the end), else the response as is.

    Only a 200 whose body is the resource as sent (no content coding left on it) is cut, and
    only a single range; a multi-range request gets the whole body (RFC 9110 §14.2 lets a
    server ignore Range), as does anything that does not parse.
    """
    asked = next((v for k, v in request.headers if k.lower() == "range"), None)
    if asked is None or request.method != "GET" or response.status != 200:
        return response
    if any(k.lower() == "content-encoding" for k, _ in response.headers):
        return response
    match = _ONE_RANGE.match(asked)
    if match is None or not (match.group(1) or match.group(2)):
        return response
    size = len(response.body)
    first_s, last_s = match.groups()
    if first_s:
        first = int(first_s)
        if last_s and int(last_s) < first:
            return response  # not a valid range (RFC 9110 §14.1.1): ignored
        last = min(int(last_s), size - 1) if last_s else size - 1
    else:  # a suffix: the last N bytes
        first, last = max(size - int(last_s), 0), size - 1
    kept = [(k, v) for k, v in response.headers if k.lower() not in ("content-range",)]
    if first >= size:
        unsatisfiable = [*kept, ("Content-Range", f"bytes */{size}")]
        return ProxyResponse(416, unsatisfiable, b"", "Range Not Satisfiable")
    if not any(k.lower() == "accept-ranges" for k, _ in kept):
        kept.append(("Accept-Ranges", "bytes"))
    kept.append(("Content-Range", f"bytes {first}-{last}/{size}"))
    return ProxyResponse(206, kept, response.body[first : last + 1], "Partial Content")


def _https_origin(authority: str) -> str:
    """``https://host[:port]`` of a ``CONNECT`` target (the default port left out)."""
    return "https://" + (authority[:-4] if authority.endswith(":443") else authority)


def _head(response: ProxyResponse) -> bytes:
    """The status line and headers sent to the browser, the body whole after them.

    The handlers give a body and headers that agree: what was decoded for the browser has no
    Content-Encoding line left (crawler/inflate.py), an encoding we cannot decode keeps its
    line, so the browser gets what a browser gets from the server; only the length is ours.
    """
    lines = [f"HTTP/1.1 {response.status} {response.reason or 'OK'}"]
    for name, value in response.headers:
        low = name.lower()
        if low in HOP_BY_HOP or low == "content-length":
            continue
        lines.append(f"{name}: {value}")
    lines.append(f"Content-Length: {len(response.body)}")
    lines.append("Connection: keep-alive")
    text = "\r\n".join(lines) + "\r\n\r\n"
    return text.encode("latin-1", "replace")
