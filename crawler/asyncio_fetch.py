"""An asyncio HTTP/1.1 download handler (experimental, off by default): httptools parsing,
keep-alive connections per (scheme, host, port), the reactor's resolver for addresses.

Why: the crawl benchmark asks whether Twisted's HTTP11ClientProtocol (plus its Deferred chains) is what
keeps the crawler's CPU per URL above 1 ms. This handler does the same fetch on an
``asyncio.Protocol`` with the C parser of ``httptools``, inside Scrapy's own streaming handler
frame (``BaseStreamingDownloadHandler``: signals, StopDownload, maxsize, dataloss, Response
building), so the two can be measured side by side. It is selected by
``HARVESTFLOW_ASYNCIO_FETCH`` only; see bench/README.md (crawler prose) for what it measured
and what it lacks before it could be the default.

Addresses: a new connection asks the reactor's resolver (the crawl's ``ArchivalResolver``:
overrides, the non-public address rule, DNS records) and connects to the address it answered;
that peer address is the response's ``ip_address`` (WARC-IP-Address).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import ssl
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httptools
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
)
from scrapy.http import Headers
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached

from crawler import CrawlerError
from crawler.errors import HeaderTooLarge
from crawler.internals import BaseStreamingDownloadHandler

log = logging.getLogger(__name__)

_DEFAULT_PORTS = {"http": 80, "https": 443}
# hop-by-hop framing, not the resource's: Twisted's client keeps them out of a response's headers
_CONNECTION_CONTROL = frozenset(
    (
        b"content-length",
        b"connection",
        b"keep-alive",
        b"te",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"proxy-connection",
    )
)


class DataLoss(CrawlerError):
    """The connection ended before the response's declared end."""


class _Exchange:
    """One response being read on a connection: status, headers, body chunks, end."""

    def __init__(self, head: bool, max_header_bytes: int) -> None:
        self.head = head
        self.max_header_bytes = max_header_bytes
        self.header_bytes = 0
        self.status = 0
        self.version = "1.1"
        self.headers: dict[bytes, list[bytes]] = {}
        self.chunks: deque[bytes] = deque()
        self.headers_done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiter: asyncio.Future[None] | None = None
        self.complete = False
        self.error: BaseException | None = None
        self.received_any = False
        self.until_close = (
            False  # no Content-Length, not chunked: the body ends with the connection
        )

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Connection(asyncio.Protocol):
    """A keep-alive HTTP/1.1 client connection; httptools' parser calls the ``on_*`` methods."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.exchange: _Exchange | None = None
        self.closed = False
        self.peer: tuple[Any, ...] | None = None
        self.ssl_object: Any = None
        self._name: bytes | None = None

    # --- transport events ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.peer = transport.get_extra_info("peername")
        self.ssl_object = transport.get_extra_info("ssl_object")

    def data_received(self, data: bytes) -> None:
        ex = self.exchange
        if ex is None:  # bytes nobody asked for: the connection is not reusable
            self.close()
            return
        ex.received_any = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            self._fail(exc.__context__ or exc)
        except httptools.HttpParserError as exc:
            self._fail(DownloadFailedError(f"invalid HTTP response: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        ex = self.exchange
        if ex is None or ex.complete:
            return
        if ex.until_close and ex.headers_done.done() and ex.error is None:
            # a body delimited by the end of the connection (no length, not chunked) ends here
            ex.complete = True
            self.exchange = None
            ex.wake()
            return
        self._fail(DataLoss(f"connection lost: {exc}" if exc else "connection closed"))

    # --- parser callbacks ------------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        ex = self.exchange
        assert ex is not None
        ex.header_bytes += len(name) + len(value) + 4
        if ex.max_header_bytes and ex.header_bytes > ex.max_header_bytes:
            raise HeaderTooLarge()
        # lower-cased as Twisted does (Scrapy's Headers title-cases them again)
        ex.headers.setdefault(name.lower(), []).append(value)

    def on_headers_complete(self) -> None:
        ex = self.exchange
        assert ex is not None
        ex.status = self.parser.get_status_code()
        ex.version = self.parser.get_http_version()
        ex.until_close = (
            b"content-length" not in ex.headers
            and b"transfer-encoding" not in ex.headers
            and ex.status >= 200
            and ex.status not in (204, 304)
        )
        if not ex.headers_done.done():
            ex.headers_done.set_result(None)
        if ex.head:  # no body follows, whatever Content-Length says; not reused
            ex.complete = True
            self.exchange = None
            self.close()
            ex.wake()

    def on_body(self, body: bytes) -> None:
        ex = self.exchange
        if ex is None:  # a HEAD's response ended at its headers; the connection is closing
            return
        ex.chunks.append(body)
        ex.wake()

    def on_message_complete(self) -> None:
        ex = self.exchange
        if ex is None:
            return
        ex.complete = True
        self.exchange = None
        if not self.parser.should_keep_alive():
            self.close()
        ex.wake()

    # --- ours ------------------------------------------------------------------------------------
    def _fail(self, exc: BaseException) -> None:
        ex = self.exchange
        self.close()
        if ex is None:
            return
        ex.error = exc
        if not ex.headers_done.done():
            ex.headers_done.set_exception(exc)
            ex.headers_done.exception()  # retrieved: no "never retrieved" warning
        ex.wake()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def idle(self) -> bool:
        transport = self.transport
        return (
            transport is not None
            and not self.closed
            and self.exchange is None
            and not transport.is_closing()
        )


class _Response:
    """What the streaming frame reads: one exchange on the connection that carried it."""

    def __init__(self, conn: _Connection, ex: _Exchange) -> None:
        self.conn = conn
        self.ex = ex


class AsyncioHTTPDownloadHandler(BaseStreamingDownloadHandler[_Response]):
    """HTTP/1.1 over asyncio streams of bytes, parsed by httptools."""

    supports_proxies = False

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.max_header_bytes = settings.getint("HARVESTFLOW_MAX_HEADER_BYTES")
        self.dns_timeout = settings.getfloat("DNS_TIMEOUT", 20.0)
        self.idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self.per_host = max(1, self._pool_size_per_host)
        self.ssl_context = ssl.create_default_context()
        self.ssl_context.check_hostname = False  # an archive records what is served
        self.ssl_context.verify_mode = ssl.CERT_NONE

    async def download_request(self, request: Request) -> Any:
        timeout = request.meta.get("download_timeout", self._DEFAULT_CONNECT_TIMEOUT)
        try:
            async with asyncio.timeout(timeout):
                return await super().download_request(request)
        except TimeoutError as exc:
            raise DownloadTimeoutError(
                f"Getting {request.url} took longer than {timeout} seconds."
            ) from exc

    async def _address(self, host: str) -> str:
        try:
            ipaddress.ip_address(host)
            return host  # a literal address: checked by RefuseBeforeFetchMiddleware
        except ValueError:
            pass
        from twisted.internet import reactor

        d = reactor.resolver.getHostByName(host, (int(self.dns_timeout),))
        try:
            async with asyncio.timeout(self.dns_timeout):
                return str(await maybe_deferred_to_future(d))
        except TimeoutError as exc:
            raise CannotResolveHostError(f"{host}: DNS lookup timed out") from exc
        except Exception as exc:
            raise CannotResolveHostError(f"{host}: {exc}") from exc

    async def _connect(self, scheme: str, host: str, port: int) -> _Connection:
        address = await self._address(host)
        loop = asyncio.get_running_loop()
        try:
            if scheme == "https":
                _, proto = await loop.create_connection(
                    _Connection, address, port, ssl=self.ssl_context, server_hostname=host
                )
            else:
                _, proto = await loop.create_connection(_Connection, address, port)
        except ConnectionRefusedError as exc:
            raise DownloadConnectionRefusedError(str(exc)) from exc
        except OSError as exc:
            raise DownloadConnectionRefusedError(f"connecting to {host}:{port}: {exc}") from exc
        return proto

    def _take_idle(self, key: tuple[str, str, int]) -> _Connection | None:
        pool = self.idle.get(key)
        while pool:
            conn = pool.pop()
            if conn.idle():
                return conn
        return None

    def _give_back(self, key: tuple[str, str, int], conn: _Connection) -> None:
        if not conn.idle():
            return
        pool = self.idle.setdefault(key, [])
        if len(pool) < self.per_host:
            pool.append(conn)
        else:
            conn.close()

    @staticmethod
    def _request_bytes(request: Request, netloc: str, path: str) -> bytes:
        lines = [f"{request.method} {path} HTTP/1.1\r\n".encode("latin-1")]
        if b"Host" not in request.headers:
            lines.append(
                b"Host: " + netloc.encode("idna" if not netloc.isascii() else "ascii") + b"\r\n"
            )
        for name, values in request.headers.items():
            if name == b"Proxy-Authorization":
                continue
            for value in values:
                lines.append(name + b": " + value + b"\r\n")
        body = request.body or b""
        if body or request.method in ("POST", "PUT", "PATCH"):
            lines.append(b"Content-Length: %d\r\n" % len(body))
        lines.append(b"\r\n")
        lines.append(body)
        return b"".join(lines)

    @asynccontextmanager
    async def _make_request(self, request: Request, timeout: float) -> AsyncIterator[_Response]:
        parsed = urlparse_cached(request)
        scheme = parsed.scheme
        if scheme not in _DEFAULT_PORTS:
            raise DownloadFailedError(f"unsupported scheme {scheme!r}")
        host = parsed.hostname or ""
        port = parsed.port or _DEFAULT_PORTS[scheme]
        key = (scheme, host, port)
        path = parsed.path or "/"
        if parsed.params:
            path += ";" + parsed.params
        if parsed.query:
            path += "?" + parsed.query
        data = self._request_bytes(request, parsed.netloc.rpartition("@")[2], path)
        head = request.method == "HEAD"
        conn, ex = await self._send(key, data, head)
        try:
            yield _Response(conn, ex)
        finally:
            if ex.complete and ex.error is None:
                self._give_back(key, conn)
            else:
                conn.exchange = None
                conn.close()

    async def _send(
        self, key: tuple[str, str, int], data: bytes, head: bool
    ) -> tuple[_Connection, _Exchange]:
        """Send the request on an idle connection of ``key`` (else a new one) and wait for the
        response's headers. A kept-alive connection the server closed as we sent is replaced
        once (nothing was received on it: the request was not answered)."""
        for attempt in (0, 1):
            conn = self._take_idle(key)
            reused = conn is not None
            if conn is None:
                conn = await self._connect(*key)
            ex = _Exchange(head, self.max_header_bytes)
            conn.exchange = ex
            assert conn.transport is not None
            conn.transport.write(data)
            try:
                await ex.headers_done
            except DataLoss:
                if reused and attempt == 0 and not ex.received_any:
                    continue
                raise DownloadFailedError("connection closed before any response") from None
            return conn, ex
        raise AssertionError("unreachable")

    @staticmethod
    def _extract_headers(response: _Response) -> Headers:
        """The headers as Scrapy's Twisted client gives them, so that a capture's WARC record
        is the same whichever client fetched it: Content-Length first (when the body has
        one), then the entity headers in their order; the connection-control headers
        (Twisted's ``HTTPParser.CONNECTION_CONTROL_HEADERS``) left out."""
        ex = response.ex
        headers = Headers()
        fields = ex.headers
        length = fields.get(b"content-length")
        keep_length = ex.head  # a HEAD's Content-Length is an entity header to Twisted
        if length is not None and not keep_length and b"transfer-encoding" not in fields:
            headers[b"Content-Length"] = length[-1].strip()
        for name, values in fields.items():
            if name in _CONNECTION_CONTROL and not (keep_length and name == b"content-length"):
                continue
            headers[name] = values
        return headers

    @staticmethod
    def _build_base_response_args(response: _Response, request: Request, headers: Headers) -> Any:
        peer = response.conn.peer
        ssl_object = response.conn.ssl_object
        return {
            "status": response.ex.status,
            "url": request.url,
            "headers": headers,
            "certificate": ssl_object.getpeercert(binary_form=True) if ssl_object else None,
            "ip_address": ipaddress.ip_address(peer[0]) if peer else None,
            "protocol": f"HTTP/{response.ex.version}",
        }

    @staticmethod
    async def _iter_body_chunks(response: _Response) -> AsyncIterator[bytes]:
        ex = response.ex
        loop = asyncio.get_running_loop()
        while True:
            while ex.chunks:
                yield ex.chunks.popleft()
            if ex.error is not None:
                raise ex.error
            if ex.complete:
                return
            ex.waiter = loop.create_future()
            await ex.waiter
            ex.waiter = None

    @staticmethod
    def _is_dataloss_exception(exc: Exception) -> bool:
        return isinstance(exc, DataLoss)

    async def close(self) -> None:
        for pool in self.idle.values():
            for conn in pool:
                conn.close()
        self.idle.clear()


class ArchivalAsyncioDownloadHandler(AsyncioHTTPDownloadHandler):
    """The asyncio handler with the archival handler's start-of-fetch steps
    (``crawler.capture_middleware.start_fetch``)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        from crawler.context import context_of

        self.ctx = context_of(crawler)

    async def download_request(self, request: Request) -> Any:
        from crawler.capture_middleware import start_fetch

        start_fetch(self.ctx, request)
        try:
            return await super().download_request(request)
        except HeaderTooLarge:
            log.warning("%s: response headers too large, connection dropped", request.url)
            raise
        finally:
            request.meta.pop("download_maxsize", None)
