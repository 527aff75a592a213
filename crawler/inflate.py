"""Content-Encoding decoded in bounded chunks, within one memory budget, wherever a body is read.

Why not Scrapy's HttpCompressionMiddleware: it inflates whole bodies bounded only by
DOWNLOAD_MAXSIZE, so one small gzip bomb cost gigabytes. The archive never needs the inflated
body (the capture middleware writes the bytes as sent), so :class:`Inflater` is the one place
that inflates for every reader (link extraction, the rendering browser, the continuous crawl's
noise rules): at most ``max_inflate_bytes`` of one body, all bodies sharing
``inflate_budget_bytes``; a body cut short is read as its prefix and logged ``inflateTrunc``.
"""

from __future__ import annotations

import logging
import weakref
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

from warcio.bufferedreaders import ChunkedDataReader

from crawler.jsextract import is_javascript

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from warcio.recordloader import ArcWarcRecord

    from crawler.context import Capture

log = logging.getLogger(__name__)

INFLATE_TRUNC = "inflateTrunc"
CHUNK = 64 * 1024
# what a response gets even when the budget is spent: the head of every page is read (the
# overshoot is bounded by the requests in flight, CONCURRENT_REQUESTS x this)
MIN_INFLATE = 1024 * 1024
# the template's defaults (harvestflow.contracts.jobspec.Template), for readers without a job
DEFAULT_MAX_INFLATE = 32 * 1024 * 1024
DEFAULT_BUDGET = 64 * 1024 * 1024
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
    """Inflated bytes held by one body, given back once (by its reader when done, else when the
    object holding the body is collected)."""

    def __init__(self, budget: InflateBudget, n: int) -> None:
        self.budget = budget
        self.n = n

    def release(self) -> None:
        n, self.n = self.n, 0
        if n:
            self.budget.release(n)

    def held_by(self, owner: object) -> None:
        """Release when ``owner`` (the response carrying the body) is collected."""
        weakref.finalize(owner, self.release)


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


@dataclass
class Inflated:
    """A body as its reader gets it: decoded as far as we can (``left``: the Content-Encoding
    values still applied to it, outermost last), cut at the bounds (``cut``)."""

    body: bytes
    left: list[bytes] = field(default_factory=list)
    cut: bool = False
    decoded: bool = False  # some encoding was removed (the headers must say so)
    token: Reservation | None = None  # the budget it holds, released by its reader or owner

    def headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``headers`` with Content-Encoding telling what is left on the body (none: no line)."""
        if not self.decoded:
            return headers
        out = [(k, v) for k, v in headers if k.lower() != "content-encoding"]
        if self.left:
            out.append(("Content-Encoding", b", ".join(self.left).decode("latin-1")))
        return out


class Inflater:
    """One process's bounded inflation: at most ``limit`` bytes of one body, and ``budget``
    bytes of all the inflated bodies alive (the same for every reader of the process)."""

    def __init__(self, limit: int = DEFAULT_MAX_INFLATE, budget: int = DEFAULT_BUDGET) -> None:
        self.limit = max(1, limit)
        self.budget = InflateBudget(max(self.limit, budget))

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Inflater:
        return cls(
            settings.getint("HARVESTFLOW_MAX_INFLATE_BYTES") or DEFAULT_MAX_INFLATE,
            settings.getint("HARVESTFLOW_INFLATE_BUDGET_BYTES") or DEFAULT_BUDGET,
        )

    def inflate(self, body: bytes, values: list[bytes]) -> Inflated:
        """``body`` sent with the Content-Encoding header lines ``values``, decoded within the
        bounds; the budget it holds is in ``token`` (released by the caller)."""
        to_decode, to_keep = split_encodings(values)
        if not to_decode:
            return Inflated(body, to_keep)
        if not body:
            return Inflated(b"", to_keep, decoded=True)
        grant = self.budget.reserve(self.limit, MIN_INFLATE)
        out, cut = decode(body, to_decode, grant)
        self.budget.release(grant - len(out))
        return Inflated(out, to_keep, cut, True, Reservation(self.budget, len(out)))


_INFLATERS: weakref.WeakKeyDictionary[Any, Inflater] = weakref.WeakKeyDictionary()


def inflater_of(crawler: Crawler) -> Inflater:
    """The crawler process's :class:`Inflater` (one budget for the spider and the renderer)."""
    inflater = _INFLATERS.get(crawler)
    if inflater is None:
        inflater = _INFLATERS[crawler] = Inflater.from_settings(crawler.settings)
    return inflater


def encodings_of(headers: list[tuple[str, str]]) -> list[bytes]:
    """The Content-Encoding values of header lines (every line: a header may be repeated)."""
    return [v.encode("latin-1", "replace") for k, v in headers if k.lower() == "content-encoding"]


def record_body(record: ArcWarcRecord, inflater: Inflater) -> Inflated:
    """A WARC response record's payload as a reader gets it: de-chunked should the record keep
    the transfer coding, then decoded by ``inflater`` (warcio's ``content_stream()`` would
    inflate it whole, without a bound, and knows neither zstd nor stacked encodings)."""
    http = record.http_headers
    if http is None:
        return Inflated(record.raw_stream.read())
    stream: Any = record.raw_stream
    if (http.get_header("Transfer-Encoding") or "").lower() == "chunked":
        stream = ChunkedDataReader(stream, decomp_type=None)
    return inflater.inflate(stream.read(), encodings_of(http.headers))


class BoundedDecompressionMiddleware:
    """In Scrapy's HttpCompressionMiddleware slot (590): see the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.inflater = inflater_of(crawler)
        self.limit = self.inflater.limit
        self.budget = self.inflater.budget
        self.extract_js = crawler.settings.getbool("HARVESTFLOW_EXTRACT_JS")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoundedDecompressionMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        request.headers.setdefault("Accept-Encoding", ACCEPT_ENCODING)

    def reads(self, request: Request, mime: str) -> bool:
        """Whether anyone reads this response's body: link extraction, robots.txt, or a
        rendering browser (whatever the type: a gzipped script or JSON API is its page)."""
        return (
            wants_body(mime)
            or request.url.endswith("/robots.txt")
            or "hf_browser" in request.meta
            or mime == "application/pdf"  # its links (crawler/pdflinks.py)
            or (self.extract_js and is_javascript(mime, request.url))
        )

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response:
        from scrapy.http import TextResponse
        from scrapy.responsetypes import responsetypes

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
        if self.reads(request, mime):
            got = self.inflater.inflate(response.body, values)
        else:
            got = Inflated(b"", to_keep, decoded=True)
        if got.token is not None:
            request.meta["hf_inflated"] = got.token
        if got.cut:
            capture: Capture | None = request.meta.get("hf_capture")
            if capture is not None:
                capture.annotations.append(INFLATE_TRUNC)
            log.info(
                "%s: %d bytes inflated for its readers, the rest not (limit %d); archived as sent",
                request.url,
                len(got.body),
                self.limit,
            )
        headers = response.headers.copy()
        if to_keep:
            headers[b"Content-Encoding"] = b", ".join(to_keep)
        else:
            del headers[b"Content-Encoding"]
        cls = responsetypes.from_args(headers=headers, url=response.url, body=got.body)
        kwargs: dict[str, Any] = {"body": got.body, "headers": headers}
        if issubclass(cls, TextResponse):
            kwargs["encoding"] = None
        new = response.replace(cls=cls, **kwargs)
        if got.token is not None:
            got.token.held_by(new)
        return new
