"""Link extraction from HTML and CSS, with Heritrix's hop types (sitemaps: crawler/sitemaps.py).

Why our own extractor and not Scrapy's LinkExtractor: an archival crawler needs *every*
resource a page uses, each tagged as a navigation link (``L``) or an embed (``E``, fetched even
past the hop limit and on other hosts). Heritrix misses ``srcset`` and CSS in ``style=``; we do
not. Each link is returned as ``(absolute_url, hop, context)`` where context says where it came
from (``a/@href``, ``img/@srcset``, ``css``…), written to the metadata record's outlinks.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any
from urllib.parse import urljoin, urlsplit

from lxml import etree

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
# every tag _links_from_element reads an attribute or the text of (besides @style)
_LINK_TAGS = frozenset(
    {*_LINK_ATTRS, *_EMBED_ATTRS, "img", "source", "object", "link", "meta", "style"}
)
_EMBED_RELS = {"stylesheet", "icon", "shortcut", "preload", "prefetch", "apple-touch-icon"}
_CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))\s*\)""", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"""@import\s+(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
_REFRESH_URL = re.compile(r"""url\s*=\s*['"]?([^'"\s;]+)""", re.IGNORECASE)
_SKIP_SCHEMES = ("javascript:", "mailto:", "data:", "tel:", "about:", "#")

# annotations of a page's crawl.log line: links found by the streaming scan (the tree parser
# gave up), or none found because extraction failed altogether
EXTRACT_SCAN = "extractScan"
EXTRACT_FAIL = "extractFail"


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


# a path from the root made of characters urljoin leaves as they are ("/img/a.png"): no
# protocol-relative "//", query, fragment, parameters, backslash, space or control character
# (dot segments are ruled out apart: "/." anywhere)
_ROOT_PATH = re.compile(r"/[A-Za-z0-9_~!$&'()*+,=:@%-][A-Za-z0-9_~!$&'()*+,=:@%./-]*")


@lru_cache(maxsize=4096)
def _origin(base: str) -> str | None:
    """``scheme://netloc`` of an http(s) base URL as urljoin reads it, None otherwise."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def _absolute(base: str, raw: str | None) -> str | None:
    if raw is None:
        return None
    raw = raw.strip()
    if not raw or raw.lower().startswith(_SKIP_SCHEMES):
        return None
    # most links of a page are paths from its root: joined without urljoin's parsing of both
    # URLs, to the same result (a fifth of a page's link extraction on the crawl benchmark)
    if raw[0] == "/" and "/." not in raw and _ROOT_PATH.fullmatch(raw):
        origin = _origin(base)
        if origin is not None:
            return origin + raw
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
        tag = tag.lower()
        # most elements (p, li, div, span...) hold no link: skipped without building the
        # generator, which cost more than the links themselves on a plain page
        if tag not in _LINK_TAGS and el.get("style") is None:
            continue
        out.extend(_links_from_element(el, tag, base))
    return out


def html_links(
    text: str,
    page_url: str,
    *,
    scripts: Callable[[Any, str], list[Link]] | None = None,
) -> tuple[list[Link], str | None]:
    """Links of an HTML document and the annotation to log (None when the tree parse was whole).

    ``scripts``: a further extractor run on the same tree (the JavaScript one when the template
    asks for it), so the page is parsed once. The streaming scan does not run it.

    The tree is built as Scrapy's selector builds it (parsel: stripped text without NULs, UTF-8,
    lenient, ``huge_tree``); a fatal parser error (too deep, a resource limit) means a partial
    tree, so the streaming scan reads the whole text instead.
    """
    body = text.strip().replace("\x00", "").encode("utf-8") or b"<html/>"
    parser = etree.HTMLParser(recover=True, encoding="utf-8", huge_tree=True)
    try:
        root = etree.fromstring(body, parser=parser, base_url=page_url)
    except etree.LxmlError:
        root = None
    if root is not None and not parser.error_log.filter_from_fatals():
        links = extract_html(root, page_url)
        if scripts is not None:
            links += scripts(root, page_url)
        return links, None
    return scan_html(text, page_url), EXTRACT_SCAN


# one token of an HTML document for the streaming scan: a comment, a script or style element
# (its content is not markup), or a start tag with its attributes (quoted values may hold ">").
# No part of a tag may cross a "<": a hostile page of unclosed tags or quotes then costs one
# pass to the next "<" per tag, not one to the end of the document (quadratic: minutes).
_TAG_ATTRS = r"""((?:[^<>"']|"[^"<]*"|'[^'<]*')*)"""
_TOKEN = re.compile(
    r"<!--.*?(?:-->|\Z)"
    rf"|<(script|style)\b{_TAG_ATTRS}>(.*?)(?:</\1\s*>|\Z)"
    rf"|<([a-zA-Z][a-zA-Z0-9:-]*){_TAG_ATTRS}>",
    re.DOTALL | re.IGNORECASE,
)
_ATTR = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
_SCANNED_TAGS = {*_EMBED_ATTRS, *_LINK_ATTRS, "object", "link", "meta", "style", "base"}


class _ScannedTag:
    """What ``_links_from_element`` reads of an lxml element: ``get(attr)`` and ``text``."""

    __slots__ = ("attrs", "text")

    def __init__(self, attrs: dict[str, str], text: str | None = None) -> None:
        self.attrs = attrs
        self.text = text

    def get(self, name: str) -> str | None:
        return self.attrs.get(name)


def _attributes(raw: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for m in _ATTR.finditer(raw):
        name = m.group(1).lower()
        if name not in attrs:  # the first of a repeated attribute wins, as in the tree
            value = next((g for g in m.groups()[1:] if g is not None), "")
            attrs[name] = html.unescape(value)
    return attrs


def scan_html(text: str, page_url: str) -> list[Link]:
    """Links of an HTML document from a flat scan of its tags (no tree, no depth limit)."""
    tags: list[tuple[str, _ScannedTag]] = []
    for m in _TOKEN.finditer(text):
        special, special_attrs, content, name, raw = m.groups()
        if special:
            tag = special.lower()
            attrs = _attributes(special_attrs or "")
            tags.append((tag, _ScannedTag(attrs, content if tag == "style" else None)))
        elif name:
            tag = name.lower()
            if tag in _SCANNED_TAGS or (raw and "style" in raw.lower()):
                tags.append((tag, _ScannedTag(_attributes(raw or ""))))
    base = page_url
    for tag, el in tags:
        href = el.get("href") if tag == "base" else None
        if href:
            base = urljoin(page_url, href.strip())
            break
    out: list[Link] = []
    for tag, el in tags:
        out.extend(_links_from_element(el, tag, base))
    return out
