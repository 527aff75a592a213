"""Content-Encoding decoded only for link extraction, in bounded chunks, within a memory budget.

Why not Scrapy's HttpCompressionMiddleware: it inflates the whole body before anyone looks at
it, bounded only by DOWNLOAD_MAXSIZE (10 x ``max_response_bytes``, so ~1 GB), and a 2 MB gzip
response that inflates to 2 GiB made the crawler allocate that much; four at once peaked at
4 GB. The archive never needs the inflated body: the capture middleware (priority 950) writes
the bytes as sent, digests and all, before this middleware (590, Scrapy's slot) sees the
response. What is left to inflate is what the spider reads for links, so:

- a body only link extraction would read (HTML, XML, CSS, text, or no declared type; and
  robots.txt, whatever its type) is inflated, 64 KiB of output at a time, up to the template's ``max_inflate_bytes``; any other
  type (images, video, PDF…) is not inflated at all: the spider gets an empty body;
- all inflated bodies alive in the process (from this middleware until the spider has read
  them) share ``inflate_budget_bytes``; a response arriving while the budget is spent gets
  what is left of it, and at least its first MiB;
- a body cut by either bound is extracted from what was inflated, and its crawl.log line
  carries the annotation ``inflateTrunc`` (Heritrix's style, beside ``lenTrunc``: the capture is
  archived whole, only the link extraction saw a prefix).

A body that fails to decode (corrupt stream) gives the spider what was decoded before the
error; the capture is archived as sent either way.
"""

from __future__ import annotations

import logging
import weakref
import zlib
from collections.abc import Callable
from itertools import chain
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from scrapy.responsetypes import responsetypes

from crawler.context import Capture

log = logging.getLogger(__name__)

INFLATE_TRUNC = "inflateTrunc"
CHUNK = 64 * 1024
# what a response gets even when the budget is spent: the head of every page is read (the
# overshoot is bounded by the requests in flight, CONCURRENT_REQUESTS x this)
MIN_INFLATE = 1024 * 1024
ACCEPT_ENCODING = b"gzip, deflate, br, zstd"
_DECODABLE = {b"gzip", b"x-gzip", b"deflate", b"br", b"zstd"}


class InflateBudget:
    """Bytes of inflated bodies the process may hold at once (one per crawler process)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0

    def reserve(self, want: int, floor: int = 0) -> int:
        """Up to ``want`` bytes of the budget, and at least ``floor`` even when it is spent."""
        grant = max(min(floor, want), min(want, self.total - self.used))
        self.used += grant
        return grant

    def release(self, n: int) -> None:
        self.used = max(0, self.used - n)


class Reservation:
    """Inflated bytes held by one response, given back once (by the spider when it has read
    them, else when the response is collected)."""

    def __init__(self, budget: InflateBudget, n: int) -> None:
        self.budget = budget
        self.n = n

    def release(self) -> None:
        n, self.n = self.n, 0
        if n:
            self.budget.release(n)


def release_inflated(request: Request) -> None:
    """Give back the inflate budget ``request``'s response held (the spider has read it)."""
    token = request.meta.pop("hf_inflated", None)
    if token is not None:
        token.release()


def wants_body(mime: str) -> bool:
    """Whether link extraction (or robots.txt) could read a body of this type."""
    return not mime or mime.startswith("text/") or "html" in mime or "xml" in mime


def _zlib_stream(data: bytes, wbits: int, limit: int) -> tuple[bytes, bool]:
    """Inflate gzip members / a zlib or raw deflate stream to at most ``limit`` bytes.

    A corrupt stream gives what was inflated before the error (zlib.error if nothing was).
    """
    out: list[bytes] = []
    size = 0
    d = zlib.decompressobj(wbits)
    pending = data
    try:
        while size < limit:
            # max_length: never more than one chunk of output per call, whatever the ratio
            piece = d.decompress(pending, min(CHUNK, limit - size))
            out.append(piece)
            size += len(piece)
            if d.eof:
                pending = d.unused_data
                if pending and wbits == 47:  # another gzip member follows
                    d = zlib.decompressobj(wbits)
                    continue
                break
            pending = d.unconsumed_tail
            if not piece and not pending:
                break  # the stream stops short: what came is what there is
    except zlib.error:
        if not size:
            raise
        return b"".join(out), False
    cut = size >= limit and (not d.eof or (wbits == 47 and bool(d.unused_data)))
    return b"".join(out), cut


def _gunzip(data: bytes, limit: int) -> tuple[bytes, bool]:
    return _zlib_stream(data, 47, limit)  # 32 + 15: gzip (multi-member, as browsers read it)


def _inflate(data: bytes, limit: int) -> tuple[bytes, bool]:
    try:
        return _zlib_stream(data, 15, limit)
    except zlib.error:  # raw deflate without the zlib header (old IIS)
        return _zlib_stream(data, -15, limit)


def _unbrotli(data: bytes, limit: int) -> tuple[bytes, bool]:
    import brotli

    d = brotli.Decompressor()
    out = [d.process(data, output_buffer_limit=min(CHUNK, limit))]
    size = len(out[0])
    while size < limit and not d.is_finished():
        piece = d.process(b"", output_buffer_limit=min(CHUNK, limit - size))
        if not piece:
            break
        out.append(piece)
        size += len(piece)
    # the output limit is a hint to brotli (it may pass it by a few kB)
    return b"".join(out)[:limit], size >= limit and not d.is_finished()


def _unzstd(data: bytes, limit: int) -> tuple[bytes, bool]:
    from backports import zstd

    d = zstd.ZstdDecompressor()
    out = [d.decompress(data, max_length=min(CHUNK, limit))]
    size = len(out[0])
    while size < limit and not d.eof and d.needs_input is False:
        piece = d.decompress(b"", max_length=min(CHUNK, limit - size))
        if not piece:
            break
        out.append(piece)
        size += len(piece)
    return b"".join(out), size >= limit and not d.eof


_DECODERS: dict[bytes, Callable[[bytes, int], tuple[bytes, bool]]] = {
    b"gzip": _gunzip,
    b"x-gzip": _gunzip,
    b"deflate": _inflate,
    b"br": _unbrotli,
    b"zstd": _unzstd,
}


def split_encodings(values: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """(encodings to decode, last applied first; encodings left) of Content-Encoding values.

    As Scrapy: decoding stops at the first encoding (from the last applied) we cannot decode.
    """
    keep = [e.strip().lower() for e in chain.from_iterable(v.split(b",") for v in values)]
    keep = [e for e in keep if e and e != b"identity"]
    decode: list[bytes] = []
    while keep and keep[-1] in _DECODABLE:
        decode.append(keep.pop())
    return decode, keep


def decode(body: bytes, encodings: list[bytes], limit: int) -> tuple[bytes, bool]:
    """``body`` decoded through ``encodings`` (in order), each output at most ``limit`` bytes;
    (decoded, cut). A corrupt stream gives what was decoded before the error."""
    cut = False
    for enc in encodings:
        try:
            body, stage_cut = _DECODERS[enc](body, limit)
        except Exception as exc:  # zlib.error, brotli.error, zstd.ZstdError: a corrupt body
            log.debug("content-encoding %s: %s", enc.decode(), exc)
            return b"", cut
        cut = cut or stage_cut
    return body, cut


class BoundedDecompressionMiddleware:
    """In Scrapy's HttpCompressionMiddleware slot (590): see the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.limit = max(1, settings.getint("HARVESTFLOW_MAX_INFLATE_BYTES"))
        self.budget = InflateBudget(
            max(self.limit, settings.getint("HARVESTFLOW_INFLATE_BUDGET_BYTES"))
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoundedDecompressionMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        request.headers.setdefault("Accept-Encoding", ACCEPT_ENCODING)

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response:
        if request.method == "HEAD":
            return response
        values = response.headers.getlist("Content-Encoding")
        if not values:
            return response
        to_decode, to_keep = split_encodings(values)
        if not to_decode:
            return response
        ctype = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        mime = ctype.split(";")[0].strip().lower()
        token: Reservation | None = None
        wanted = wants_body(mime) or response.url.endswith("/robots.txt")
        if not wanted or not response.body:
            body, cut = b"", False
        else:
            grant = self.budget.reserve(self.limit, MIN_INFLATE)
            body, cut = decode(response.body, to_decode, grant)
            self.budget.release(grant - len(body))
            token = Reservation(self.budget, len(body))
            request.meta["hf_inflated"] = token
            if cut:
                capture: Capture | None = request.meta.get("hf_capture")
                if capture is not None:
                    capture.annotations.append(INFLATE_TRUNC)
                log.info(
                    "%s: %d bytes inflated for link extraction, the rest not (limit %d,"
                    " budget left %d); archived as sent",
                    request.url,
                    len(body),
                    self.limit,
                    grant,
                )
        headers = response.headers.copy()
        if to_keep:
            headers[b"Content-Encoding"] = b", ".join(to_keep)
        else:
            del headers[b"Content-Encoding"]
        cls = responsetypes.from_args(headers=headers, url=response.url, body=body)
        kwargs: dict[str, Any] = {"body": body, "headers": headers}
        if issubclass(cls, TextResponse):
            kwargs["encoding"] = None
        new = response.replace(cls=cls, **kwargs)
        if token is not None:
            weakref.finalize(new, token.release)
        return new
