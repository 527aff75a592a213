"""Link extraction from HTML and CSS, with Heritrix's hop types (sitemaps: crawler/sitemaps.py).

Why our own extractor and not Scrapy's LinkExtractor: an archival crawler needs *every*
resource a page uses, each tagged as a navigation link (``L``) or an embed (``E``, fetched even
past the hop limit and on other hosts). Heritrix misses ``srcset`` and CSS in ``style=``; we do
not. Each link is returned as ``(absolute_url, hop, context)`` where context says where it came
from (``a/@href``, ``img/@srcset``, ``css``…), written to the metadata record's outlinks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urljoin

Link = tuple[str, str, str]

# element → attributes holding a single URL, with the hop they give
_EMBED_ATTRS: dict[str, tuple[str, ...]] = {
    "img": ("src", "lowsrc", "longdesc"),
    "script": ("src",),
    "iframe": ("src",),
    "frame": ("src",),
    "embed": ("src",),
    "source": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
    "body": ("background",),
    "table": ("background",),
    "td": ("background",),
    "th": ("background",),
}
_LINK_ATTRS: dict[str, tuple[str, ...]] = {"a": ("href",), "area": ("href",)}
_EMBED_RELS = {"stylesheet", "icon", "shortcut", "preload", "prefetch", "apple-touch-icon"}
_CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))\s*\)""", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"""@import\s+(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
_REFRESH_URL = re.compile(r"""url\s*=\s*['"]?([^'"\s;]+)""", re.IGNORECASE)
_SKIP_SCHEMES = ("javascript:", "mailto:", "data:", "tel:", "about:", "#")


def parse_srcset(value: str) -> list[str]:
    """URLs of a ``srcset`` attribute (HTML spec's candidate parsing, simplified).

    A URL may itself contain commas (``img,1.png``); candidates are separated by a comma
    *after* a URL and its optional descriptor, so we read a URL up to whitespace first.
    """
    urls: list[str] = []
    pos, n = 0, len(value)
    while pos < n:
        while pos < n and (value[pos].isspace() or value[pos] == ","):
            pos += 1
        if pos >= n:
            break
        start = pos
        while pos < n and not value[pos].isspace():
            pos += 1
        url = value[start:pos]
        if url.endswith(","):
            urls.append(url.rstrip(","))
            continue
        urls.append(url)
        # skip the descriptor (e.g. "800w", "2x") up to the next comma
        while pos < n and value[pos] != ",":
            pos += 1
    return [u for u in urls if u]


def css_urls(text: str) -> Iterator[str]:
    """URLs referenced by CSS: ``url(...)`` and ``@import "..."``."""
    for match in _CSS_URL.finditer(text):
        yield next(g for g in match.groups() if g is not None)
    for match in _CSS_IMPORT.finditer(text):
        yield next(g for g in match.groups() if g is not None)


def _absolute(base: str, raw: str | None) -> str | None:
    if raw is None:
        return None
    raw = raw.strip()
    if not raw or raw.lower().startswith(_SKIP_SCHEMES):
        return None
    try:
        return urljoin(base, raw)
    except ValueError:
        return raw  # recorded as unfetchable later, with the reason


def extract_css(text: str, base: str, context: str = "css") -> list[Link]:
    """Links of a stylesheet (all embeds)."""
    out: list[Link] = []
    for raw in css_urls(text):
        url = _absolute(base, raw)
        if url:
            out.append((url, "E", context))
    return out


def _links_from_element(el: Any, tag: str, base: str) -> Iterable[Link]:
    for attr in _LINK_ATTRS.get(tag, ()):
        url = _absolute(base, el.get(attr))
        if url:
            yield url, "L", f"{tag}/@{attr}"
    for attr in _EMBED_ATTRS.get(tag, ()):
        if tag == "input" and (el.get("type") or "").lower() != "image":
            continue
        url = _absolute(base, el.get(attr))
        if url:
            yield url, "E", f"{tag}/@{attr}"
    if tag in ("img", "source"):
        srcset = el.get("srcset")
        if srcset:
            for raw in parse_srcset(srcset):
                url = _absolute(base, raw)
                if url:
                    yield url, "E", f"{tag}/@srcset"
    if tag == "object":
        codebase = el.get("codebase")
        obase = urljoin(base, codebase) if codebase else base
        url = _absolute(obase, el.get("data"))
        if url:
            yield url, "E", "object/@data"
    elif tag == "link":
        rels = set((el.get("rel") or "").lower().split())
        url = _absolute(base, el.get("href"))
        if url:
            yield url, ("E" if rels & _EMBED_RELS else "L"), "link/@href"
    elif tag == "meta":
        if (el.get("http-equiv") or "").lower() == "refresh":
            match = _REFRESH_URL.search(el.get("content") or "")
            url = _absolute(base, match.group(1)) if match else None
            if url:
                yield url, "R", "meta/@content"
    elif tag == "style" and el.text:
        yield from extract_css(el.text, base, "style")
    style = el.get("style")
    if style and "url(" in style.lower():
        yield from extract_css(style, base, f"{tag}/@style")


def extract_html(root: Any, page_url: str) -> list[Link]:
    """Links of a parsed HTML document (an lxml root), honouring ``<base href>``."""
    base = page_url
    for el in root.iter("base"):
        href = el.get("href")
        if href:
            base = urljoin(page_url, href.strip())
            break
    out: list[Link] = []
    for el in root.iter():
        tag = el.tag
        if not isinstance(tag, str):
            continue  # comments, processing instructions
        out.extend(_links_from_element(el, tag.lower(), base))
    return out
