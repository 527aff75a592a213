"""Archival capture: the download handler stamp and the downloader middleware writing WARCs.

Why a downloader middleware at priority 950: Scrapy calls ``process_response`` from the
downloader outwards, so at 950 (after HttpCompressionMiddleware's 590 in that direction) we see
the body exactly as the server sent it — still gzip when it was gzip — and in
``process_request`` the request with every header the other middlewares added. The handler
subclass notes when the fetch really starts (after the politeness wait), for crawl.log's
fetch timestamp and the WARC date, and bounds the size of response headers with a subclass of
Scrapy's own lenient parser (private Scrapy classes, kept in crawler/internals.py:
tests/crawler/test_capture_middleware_bounds.py fails if an upgrade changes them). Responses cut at the
size limit are stopped through Scrapy's ``bytes_received`` signal (StopDownload), so we keep
what arrived and mark it WARC-Truncated.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadFailedError, StopDownload
from scrapy.http import Response

from crawler.context import Capture, CrawlContext, context_of
from crawler.dedup_lookup import EarlierCapture
from crawler.errors import AddressRefused, FetchedByBrowser, HeaderTooLarge, QuotaExceeded
from crawler.internals import HeaderOverflow, HTTP11DownloadHandler, bound_response_headers
from crawler.politeness import give_back_turn
from crawler.warc import records
from crawler.warc.redact import redact_request
from harvestflow.addresses import address_allowed
from harvestflow.formats.cdx import CdxEntry, http_mime
from harvestflow.formats.postquery import body_query, keyed
from harvestflow.formats.urls import canonical_key, host_of

log = logging.getLogger(__name__)


class ArchivalHTTPDownloadHandler(HTTP11DownloadHandler):
    """HTTP/1.1 handler that notes the real start of each fetch and bounds header size."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.ctx = context_of(crawler)
        bound_response_headers(self, crawler.settings.getint("HARVESTFLOW_MAX_HEADER_BYTES"))

    async def download_request(self, request: Request) -> Response:
        start_fetch(self.ctx, request)
        try:
            return await super().download_request(request)
        except DownloadFailedError as exc:
            reasons = getattr(exc.__cause__, "reasons", None) or []
            if any(r.check(HeaderOverflow) for r in reasons):
                log.warning("%s: response headers too large, connection dropped", request.url)
                raise HeaderTooLarge() from exc
            raise
        finally:
            request.meta.pop("download_maxsize", None)


def start_fetch(ctx: CrawlContext, request: Request) -> None:
    """What every archival handler does as its fetch really starts (after the politeness
    wait): the browser-claim check, the fetch-start time, Scrapy's size limit lifted."""
    # a queued URL a rendering page's browser fetched while this request waited (in the
    # frontier or the host's delay queue): that fetch was its capture (crawler/rendering/renderer.py)
    if ctx.renderer is not None and "hf_browser" not in request.meta:
        hf = request.meta.get("hf")
        if hf is not None:
            if hf["key"] in ctx.browser_claimed:
                give_back_turn(ctx.crawler, request)  # nothing is sent to the host
                raise FetchedByBrowser()
            ctx.fetch_started.add(hf["key"])  # too late for the browser to claim
    request.meta["hf_fetch_start"] = time.time()
    # Scrapy cancels a response whose declared Content-Length passes DOWNLOAD_MAXSIZE
    # before reading any of it: the capture would be lost. We keep the first
    # max_response_bytes instead (cut by the bytes_received signal, WARC-Truncated), so the
    # download itself gets no limit; decompression has its own bounds (crawler.inflate).
    request.meta["download_maxsize"] = 0


def _str(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def header_list(headers: Any) -> list[tuple[str, str]]:
    """All header lines of a Scrapy Headers object, repeated ones kept."""
    out: list[tuple[str, str]] = []
    for key, values in headers.items():
        for value in values:
            out.append((_str(key), _str(value)))
    return out


class BrowserClaimMiddleware:
    """First downloader middleware: drops a request whose URL a rendering page's browser has
    fetched since it was queued (before robots or budgets could log a line for it);
    ``ArchivalHTTPDownloadHandler`` drops those that were already past it, waiting in the
    host's delay queue (crawler/rendering/renderer.py)."""

    def __init__(self, crawler: Crawler) -> None:
        self.ctx = context_of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BrowserClaimMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        claimed = self.ctx.browser_claimed
        if claimed and "hf_browser" not in request.meta:
            hf = request.meta.get("hf")
            if hf is not None and hf["key"] in claimed:
                raise FetchedByBrowser()


class RefuseBeforeFetchMiddleware:
    """Refusals decided before any fetch: the address safety rule and the budgets' quotas.

    Why its own middleware, ordered before the host lease (crawler/leases.py, 940): a URL
    refused here takes no lease of its host and waits no politeness delay (a job over its quota
    once spent the host's delay on each refused URL). The capture middleware's
    ``process_exception`` gives back the quota reserved here when the fetch fails.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.ctx = context_of(crawler)
        settings = crawler.settings
        self.overrides = {h.lower() for h in settings.getdict("HARVESTFLOW_RESOLVE")}
        self.allow_private = settings.getbool("HARVESTFLOW_ALLOW_PRIVATE_ADDRESSES")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RefuseBeforeFetchMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        host = host_of(request.url)
        if host in self.ctx.refused_hosts or (
            not self.allow_private and host not in self.overrides and not address_allowed(host)
        ):
            raise AddressRefused("err=address-not-allowed")
        if "hf" in request.meta:
            domain = self.ctx.budgets.domain_for(host)
            quota = self.ctx.budgets.reserve(domain)
            if quota:
                raise QuotaExceeded(quota)
            request.meta["hf_reserved"] = domain


class WarcCaptureMiddleware:
    """Writes request + response (or revisit) records for every fetch."""

    def __init__(self, crawler: Crawler) -> None:
        self.ctx = context_of(crawler)
        settings = crawler.settings
        self.max_bytes = settings.getint("HARVESTFLOW_MAX_RESPONSE_BYTES")
        self.max_time = settings.getfloat("DOWNLOAD_TIMEOUT") * 0.9
        exclude = settings.get("HARVESTFLOW_DEDUP_MIME_EXCLUDE")
        self.dedup_exclude = re.compile(exclude) if exclude else None
        crawler.signals.connect(self.bytes_received, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcCaptureMiddleware:
        return cls(crawler)

    # --- before the fetch ---------------------------------------------------------------------
    def process_request(self, request: Request, spider: Any = None) -> None:
        if "hf" in request.meta:
            # a POST (a page's API call) is its own capture, never a conditional GET's revisit
            earlier = self.ctx.dedup.get(request.meta["hf"]["key"]) if _plain(request) else None
            if earlier is not None:
                if earlier.etag:
                    request.headers[b"If-None-Match"] = earlier.etag
                if earlier.last_modified:
                    request.headers[b"If-Modified-Since"] = earlier.last_modified
        request.meta["hf_received"] = 0

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        domain = request.meta.pop("hf_reserved", None)
        if domain is not None:
            self.ctx.budgets.release(domain)
        if host_of(request.url) in self.ctx.refused_hosts:
            # refused by the resolver's safety rule: final, not worth a retry
            raise AddressRefused("err=address-not-allowed")

    def bytes_received(self, data: bytes, request: Request, spider: Any = None) -> None:
        received = request.meta.get("hf_received", 0) + len(data)
        request.meta["hf_received"] = received
        if received > self.max_bytes:
            request.meta["hf_truncated"] = "length"
            raise StopDownload(fail=False)
        start = request.meta.get("hf_fetch_start")
        if start and time.time() - start > self.max_time:
            request.meta["hf_truncated"] = "time"
            raise StopDownload(fail=False)

    # --- after the fetch ----------------------------------------------------------------------
    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response:
        end = time.time()
        start = request.meta.get("hf_fetch_start", end)
        fetch_start = dt.datetime.fromtimestamp(start, dt.UTC)
        date = records.warc_date(fetch_start)
        truncated = request.meta.get("hf_truncated")
        body = response.body
        if truncated == "length":
            body = body[: self.max_bytes]
        digest = records.sha1_digest(body)
        ctype = _str(response.headers.get(b"Content-Type") or b"")
        mime = ctype.split(";")[0].strip().lower() or "no-type"
        location = response.headers.get(b"Location")
        resp_id = records.new_record_id()
        http = records.response_http_headers(
            response.status, response.protocol or "HTTP/1.1", header_list(response.headers)
        )
        annotations: list[str] = []
        if truncated:
            annotations.append("lenTrunc" if truncated == "length" else "timeTrunc")
        ip = str(response.ip_address) if response.ip_address else None
        key = request.meta.get("hf", {}).get("key") or canonical_key(request.url)
        earlier = self.ctx.dedup.get(key) if _plain(request) else None
        original = (
            self._same_payload(request, earlier, digest, len(body))
            if response.status == 200
            and not truncated
            and not (self.dedup_exclude and self.dedup_exclude.search(mime))
            else None
        )
        main = None
        if earlier is not None and response.status == 304:
            main = records.revisit_record(
                request.url,
                http,
                earlier.digest,
                date,
                resp_id,
                ip,
                records.PROFILE_NOT_MODIFIED,
                earlier.url,
                earlier.date,
                earlier.record_id,
            )
            annotations.append("duplicate:server-not-modified")
            digest = earlier.digest
        elif original is not None:
            main = records.revisit_record(
                request.url,
                http,
                digest,
                date,
                resp_id,
                ip,
                records.PROFILE_IDENTICAL,
                original.url,
                original.date,
                original.record_id,
            )
            annotations.append("duplicate:digest")
        req_id = records.new_record_id()
        if main is None:
            main = records.response_record(
                request.url, http, body, date, resp_id, ip, truncated, req_id, digest
            )
        req_headers, req_body = redact_request(
            [("Host", urlparse_netloc(request.url)), *header_list(request.headers)],
            request.body or b"",
            request.meta,
        )
        req = records.request_record(
            request.url, request.method, req_headers, req_body, date, resp_id, req_id
        )
        placed = self.ctx.records.write(req, main)
        name, offset, length = placed[1]
        # the CDX line the reference indexer gives this record: its MIME from the header lines
        # as written (after the write: warcio percent-encodes non-ASCII values as it writes)
        is_revisit = main.rec_type == "revisit"
        cdx_mime = "warc/revisit" if is_revisit else http_mime(main.http_headers.headers)
        entry = CdxEntry(request.url, date, cdx_mime, str(response.status), digest, length, offset)
        if not is_revisit and keyed(request.method):  # found by replay under its body
            entry.method = request.method.upper()
            sent = req.http_headers  # the request line and headers as written
            entry.request_body = body_query(
                sent.get_header("Content-Type"), sent.get_header("Content-Length"), req_body
            )
        self.ctx.records.record_cdx(entry, name)
        domain = request.meta.pop("hf_reserved", None)
        capture = Capture(
            status=response.status,
            size=len(body),
            digest=digest,
            mime=mime,
            record_id=resp_id,
            date=date,
            fetch_start=fetch_start,
            duration_ms=int((end - start) * 1000),
            counted=domain is not None,
            annotations=annotations,
            location=_str(location) if location else None,
            revisit=is_revisit,
        )
        request.meta["hf_capture"] = capture
        if domain is not None:
            self.ctx.budgets.commit(domain, len(body))
        else:  # a prerequisite (robots.txt): logged here, it never reaches the spider
            self.ctx.budgets.add_bytes(self.ctx.budgets.domain_for(host_of(request.url)), len(body))
            self.ctx.log_capture(request, capture)
        return response

    def _same_payload(
        self, request: Request, earlier: EarlierCapture | None, digest: str, size: int
    ) -> EarlierCapture | None:
        """The earlier capture holding this payload: the URL's own, else (a payload of some
        size, fetched by GET) one at another URL of the dedup index, found by its digest."""
        if earlier is not None and earlier.digest == digest:
            return earlier
        if size == 0 or not _plain(request):
            return None
        return self.ctx.dedup_digests.get(digest)


def _plain(request: Request) -> bool:
    """A GET: the one request a capture of the same URL can stand for (dedup, revisits)."""
    return request.method == "GET"


def urlparse_netloc(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).netloc
