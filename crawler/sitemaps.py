"""Sitemaps (sitemaps.org) as Heritrix and the UK Web Archive read them.

Why: pages no other page links to are often listed only in a sitemap. With ``extract_sitemaps``
the crawl reads each seed host's ``/sitemap.xml`` and robots.txt ``Sitemap:`` lines (indexes,
gzipped and plain-text sitemaps); every URL found is a link with hop ``M``. Hostile sitemaps
are bounded (size, :data:`MAX_URLS`, no entities), and a response is read as a sitemap only
when it was queued as one, never because its MIME type says XML.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from crawler import CrawlerError
from crawler.internals import DecompressionMaxSizeExceeded
from crawler.links import Link

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

HOP = "M"
SEED_CONTEXT = "sitemap"  # /sitemap.xml of a seed host
ROBOTS_CONTEXT = "robots/sitemap"  # a Sitemap: line of robots.txt
INDEX_CONTEXT = "sitemapindex/loc"  # a sitemap listed by a sitemap index
URL_CONTEXT = "sitemap/loc"  # a page listed by a sitemap
SITEMAP_CONTEXTS = frozenset({SEED_CONTEXT, ROBOTS_CONTEXT, INDEX_CONTEXT})

MAX_INFLATED_BYTES = 50 * 1024 * 1024  # the protocol's limit for one (uncompressed) sitemap
MAX_URLS = 50_000  # the protocol's limit of locations in one sitemap
MAX_INDEX_DEPTH = 3  # sitemap → index → index → sitemap; deeper indexes are not followed
GZIP_MAGIC = b"\x1f\x8b"


class SitemapError(CrawlerError, ValueError):
    """A sitemap that cannot be read (too large once inflated, broken gzip)."""


def seed_sitemap_url(seed: str) -> str:
    """``/sitemap.xml`` of a seed's host (scheme and port kept)."""
    return urljoin(seed, "/sitemap.xml")


def seed_links(seed: str) -> list[Link]:
    """What a seed's host adds to the frontier when the template extracts sitemaps: its
    ``/sitemap.xml`` (robots.txt, fetched as every host's prerequisite when the template obeys
    it, is read by :class:`crawler.robots_sitemaps.RobotsSitemaps`; a crawl that ignores
    robots.txt never fetches it)."""
    return [(seed_sitemap_url(seed), HOP, SEED_CONTEXT)]


def robots_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"


def index_depth(hops: str) -> int:
    """How many sitemaps led to this one (the trailing manifest hops of its path)."""
    return len(hops) - len(hops.rstrip(HOP))


def inflate(body: bytes, limit: int) -> bytes:
    """The sitemap's bytes: gunzipped when they are gzip (``.xml.gz``), at most ``limit``."""
    if body[:2] != GZIP_MAGIC:
        if len(body) > limit:
            raise SitemapError(f"sitemap of {len(body)} bytes is over the {limit}-byte limit")
        return body
    try:
        return gunzip(body, max_size=limit)
    except DecompressionMaxSizeExceeded as exc:
        raise SitemapError(f"gzipped sitemap inflates past the {limit}-byte limit") from exc
    except (OSError, EOFError) as exc:
        raise SitemapError(f"broken gzip: {exc}") from exc


def _text_sitemap(data: bytes, base: str) -> list[str]:
    """A plain-text sitemap: one absolute http(s) URL a line (sitemaps.org, "Text file")."""
    urls = []
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if line.lower().startswith(("http://", "https://")):
            urls.append(urljoin(base, line))
    return urls


def parse_sitemap(body: bytes, url: str, depth: int, limit: int) -> list[Link]:
    """Links of a fetched sitemap: ``(url, "M", context)`` for its pages and its sitemaps.

    ``depth`` is :func:`index_depth` of the sitemap itself; an index found at
    :data:`MAX_INDEX_DEPTH` is not followed further (logged).
    """
    data = inflate(body, limit)
    if not data.strip():
        return []
    if data.lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()[:1] != b"<":  # BOM, then XML?
        found = _text_sitemap(data, url)[:MAX_URLS]
        return [(u, HOP, URL_CONTEXT) for u in found]
    try:
        sitemap = Sitemap(data)
    except (StopIteration, SyntaxError, ValueError) as exc:
        raise SitemapError(f"not a sitemap ({exc or 'empty document'})") from exc
    if sitemap.type not in ("urlset", "sitemapindex"):
        raise SitemapError(f"not a sitemap (root element {sitemap.type!r})")
    is_index = sitemap.type == "sitemapindex"
    if is_index and depth >= MAX_INDEX_DEPTH:
        log.warning("%s: sitemap index nested %d deep, not followed", url, depth)
        return []
    context = INDEX_CONTEXT if is_index else URL_CONTEXT
    out: list[Link] = []
    try:
        for entry in sitemap:
            loc = (entry.get("loc") or "").strip()
            if not loc:
                continue
            out.append((urljoin(url, loc), HOP, context))
            if len(out) >= MAX_URLS:
                log.warning("%s: more than %d locations, the rest is not read", url, MAX_URLS)
                break
    except SyntaxError as exc:  # lxml gives up past what it could recover: keep what was read
        log.warning("%s: sitemap broken after %d locations: %s", url, len(out), exc)
    return out


def links_of_response(body: bytes, url: str, hf: dict[str, Any], max_bytes: int) -> list[Link]:
    """Links of a response queued as a sitemap, [] for any other response. A bad sitemap is
    logged and gives no links (it is archived all the same)."""
    context = hf.get("context")
    if context not in SITEMAP_CONTEXTS:
        return []
    try:
        return parse_sitemap(
            body, url, index_depth(hf.get("hops", "")), min(MAX_INFLATED_BYTES, max_bytes)
        )
    except SitemapError as exc:
        log.warning("sitemap %s not read: %s", url, exc)
        return []


def is_sitemap_context(context: str | None) -> bool:
    return context in SITEMAP_CONTEXTS
