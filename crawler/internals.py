"""The private parts of Scrapy and Twisted the crawler relies on, each in one place.

Why a module of its own: the crawler needs a few things neither library offers publicly (a
bound on the size of a response's header section, the type of a size-limited gunzip's error,
an offline public suffix list for the cookie middleware, the robots.txt middleware's parser
table, the requests waiting in the downloader's per-host queues and their scheduled turn, a
cheap module lookup for the deprecated aliases Scrapy's TLS modules make at import). Each is used here and only here, with the reason; every other crawler module uses
public APIs. A Scrapy or Twisted upgrade that moves one of these fails at import or in
``tests/crawler/test_internals_versions.py`` and ``tests/crawler/test_capture_middleware_bounds.py``, not in the
middle of a crawl; the version ranges they were checked with are pinned in pyproject.toml.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import scrapy.utils.deprecate

# gunzip(max_size=...) raises this private ValueError subclass past the limit; Scrapy exports
# no public name for it (its own sitemap spider and HttpCompressionMiddleware import it too)
from scrapy.utils._compression import _DecompressionMaxSizeExceeded


@contextmanager
def _deprecated_aliases_named_by_frame() -> Iterator[None]:
    """While Scrapy's TLS modules are imported: the module of each deprecated class alias they
    make is read off its caller's frame instead of out of ``inspect.stack()``.

    Why: ``scrapy.core.downloader.tls`` and ``.contextfactory`` make three deprecated aliases
    at import (``create_deprecated_class``), each calling ``inspect.stack()`` for one frame and
    ``inspect.getmodule`` on it; the stack reads the source of every frame of the importing
    stack, and ``getmodule`` walks every module loaded (~0.1-0.2 CPU-s in every crawl process,
    whatever its depth). The alias gets the same ``__module__``, the importing module's
    (checked in tests/crawler/test_internals_versions.py). Only that module's name ``inspect``
    is replaced, for the length of the import.
    """
    real = scrapy.utils.deprecate.inspect

    def stack(context: int = 1) -> list[tuple[Any, ...]]:
        here = inspect.currentframe()
        maker = here.f_back if here else None  # create_deprecated_class
        assert maker is not None
        return [(maker,), (maker.f_back,)]  # [1]: the module making the alias

    def getmodule(obj: Any, filename: str | None = None) -> Any:
        if inspect.isframe(obj):
            return sys.modules.get(obj.f_globals.get("__name__", ""))
        return real.getmodule(obj, filename)

    scrapy.utils.deprecate.inspect = types.SimpleNamespace(  # type: ignore[assignment]
        **{**vars(real), "stack": stack, "getmodule": getmodule}
    )
    try:
        yield
    finally:
        scrapy.utils.deprecate.inspect = real


# Scrapy's download handlers import its TLS modules (see _deprecated_aliases_named_by_frame)
with _deprecated_aliases_named_by_frame():
    # Scrapy's frame for its asyncio-based handlers (signals, StopDownload, maxsize, dataloss,
    # Response building); crawler/asyncio_fetch.py builds its handler on it
    from scrapy.core.downloader.handlers._base_streaming import BaseStreamingDownloadHandler

    # scrapy.core is Scrapy's engine package. HTTP11DownloadHandler is the default http(s)
    # handler, named by its path in DOWNLOAD_HANDLERS_BASE (public), but it lives in
    # scrapy.core; the three _Lenient* classes are Scrapy's lenient HTTP/1.1 parser stack,
    # which the header bound extends: Twisted's HTTP11ClientProtocol hard-codes its parser
    # class and has no header-size limit.
    from scrapy.core.downloader.handlers.http11 import (
        HTTP11DownloadHandler,
        _LenientHTTP11ClientFactory,
        _LenientHTTP11ClientProtocol,
        _LenientHTTPClientParser,
    )

__all__ = [
    "BaseStreamingDownloadHandler",
    "DecompressionMaxSizeExceeded",
    "HTTP11DownloadHandler",
    "HeaderOverflow",
    "bound_response_headers",
    "offline_cookie_public_suffixes",
    "robots_parser_of",
    "take_unsent_requests",
]

DecompressionMaxSizeExceeded = _DecompressionMaxSizeExceeded


class HeaderOverflow(Exception):
    """Raised inside Twisted's parser; Twisted turns it into a ResponseFailed reason."""


class BoundedHeaderParser(_LenientHTTPClientParser):
    """Scrapy's lenient response parser, counting the bytes of the header section.

    Why: Twisted caps each header line (16 KiB) but neither their number nor a header
    continued over many lines, so a hostile or broken server could feed headers until the
    download timeout. Past ``max_header_bytes`` the parser raises; Twisted's protocol drops
    the connection and fails the request with that reason.
    """

    max_header_bytes = 0  # set per request by BoundedHeaderProtocol
    header_bytes = 0

    def lineReceived(self, line: bytes) -> None:
        self.header_bytes += len(line) + 1
        if self.max_header_bytes and self.header_bytes > self.max_header_bytes:
            raise HeaderOverflow(f"response headers over {self.max_header_bytes} bytes")
        super().lineReceived(line)


class BoundedHeaderProtocol(_LenientHTTP11ClientProtocol):
    """Puts :class:`BoundedHeaderParser` on each request, as Scrapy puts its lenient one
    (``HTTP11ClientProtocol.request`` hard-codes the parser class in the private ``_parser``;
    the subclass only adds two counters)."""

    max_header_bytes = 0

    def request(self, request: Any) -> Any:
        d = super().request(request)
        parser = self._parser
        if parser is not None:
            parser.__class__ = BoundedHeaderParser
            assert isinstance(parser, BoundedHeaderParser)
            parser.max_header_bytes = self.max_header_bytes
            parser.header_bytes = 0
        return d


class BoundedHeaderFactory(_LenientHTTP11ClientFactory):
    max_header_bytes = 0

    def buildProtocol(self, addr: Any) -> BoundedHeaderProtocol:
        # the quiescent callback is how Twisted's pool takes a finished connection back
        proto = BoundedHeaderProtocol(self._quiescentCallback)
        proto.max_header_bytes = self.max_header_bytes
        return proto


def bound_response_headers(handler: HTTP11DownloadHandler, limit: int) -> None:
    """Make ``handler``'s connections fail a response whose header section passes ``limit``.

    The handler's private connection pool builds its protocol factory from a class attribute
    (``_factory``); a subclass carrying this job's limit is put there.
    """
    factory: type[BoundedHeaderFactory] = type(
        "JobHeaderFactory", (BoundedHeaderFactory,), {"max_header_bytes": limit}
    )
    handler._pool._factory = factory


def offline_cookie_public_suffixes() -> None:
    """Scrapy's cookie middleware builds a module-level TLDExtract (``_split_domain``) that
    downloads the public suffix list on first use, and offers no setting for it; nothing may
    be fetched at run time, so point it at tldextract's bundled copy."""
    import scrapy.downloadermiddlewares.cookies as cookies
    import tldextract

    if not isinstance(getattr(cookies, "_split_domain", None), tldextract.TLDExtract):
        # setting a name the middleware no longer reads would fetch the list at run time
        raise RuntimeError(
            "scrapy.downloadermiddlewares.cookies has no _split_domain TLDExtract any more: "
            "crawler/internals.py needs updating for this Scrapy release"
        )
    cookies._split_domain = tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
    )


def robots_parser_of(middleware: Any, netloc: str, default: Any) -> Any:
    """The entry of Scrapy's RobotsTxtMiddleware parser table (``_parsers``) for ``netloc``:
    the parser, None after a fetch error, or the Deferred of a fetch still running (see
    ``crawler.politeness.ArchivalRobotsTxtMiddleware.robot_parser`` for why it is read)."""
    return middleware._parsers.get(netloc, default)


def take_unsent_requests(downloader: Any, wanted: Callable[[Any], bool]) -> list[tuple[Any, Any]]:
    """Take the ``wanted`` requests out of the downloader's per-host queues: (request, Deferred).

    Why: the engine hands the downloader up to CONCURRENT_REQUESTS requests, and a host's slot
    (``Downloader.slots``) keeps those it may not send yet in its private ``queue``, sending
    one per politeness delay; pausing the engine does not stop them (an operator's pause let
    a site get one request every delay for as long as the queue lasted). Each entry's Deferred
    is what the download is waiting on: the caller fires it (crawler/control.py fails it with
    a signal the filter middleware turns back into the request, which the engine schedules
    again). Requests not ``wanted`` are left in place, in their order.
    """
    taken: list[tuple[Any, Any]] = []
    for slot in downloader.slots.values():
        queue = slot.queue
        if not queue:
            continue
        kept = [entry for entry in queue if not wanted(entry[0])]
        taken.extend(entry for entry in queue if wanted(entry[0]))
        queue.clear()
        queue.extend(kept)
    return taken


def cancel_scheduled_turn(slot: Any) -> None:
    """Cancel the call Scrapy's downloader scheduled for a host slot's next request (the
    private ``Slot.latercall``, set while the slot waits its delay).

    Why: ``crawler.politeness.give_back_turn`` gives a host its turn back when the request that
    took it is dropped unsent; the downloader runs the slot's queue again as that request
    leaves it, but does nothing while such a call is scheduled — the next request would still
    wait the whole delay.
    """
    if slot.latercall is not None:
        slot.latercall.cancel()
        slot.latercall = None
