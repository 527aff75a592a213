"""Speculative link extraction from JavaScript, after Heritrix's ExtractorJS (hop ``X``).

Why: links built by script are invisible to the HTML parser. Without running the script, the
best a crawler can do is Heritrix's: try every quoted, whitespace-free string of a script that
looks very much like a URL (Heritrix 3's ``UriUtils.isVeryLikelyUri`` rules). Such links are
logged with hop ``X`` so that a curator can tell guesses from links in crawl.log.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urljoin

Link = tuple[str, str, str]

SPECULATIVE = "X"
MAX_URL_LENGTH = 2083
# JavaScript responses (Content-Type without parameters)
JS_MIME_TYPES = frozenset(
    {
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "text/javascript",
        "text/ecmascript",
        "text/x-javascript",
        "application/x-ecmascript",
    }
)

# a quoted, whitespace-free string; the quote may be backslash-escaped (a string in a string)
_JS_STRING = re.compile(r"""(\\{0,8}+["'])(\S{0,""" + str(MAX_URL_LENGTH) + r"""}?)\1""")
_NAIVE = re.compile(r"[^<>]*[./][^<>]*")
_ABSOLUTE = re.compile(r"https?://[^<>\s/]+\.[^<>\s/]+(?:/[^<>\s]*)?", re.IGNORECASE)
_PROTOCOL_RELATIVE = re.compile(r"//[^<>\s/]+\.[^<>\s/]+(?:/[^<>\s]*)?")
_QNV = r"[a-zA-Z_]+=(?:[\w\-/.]|%[0-9a-fA-F]{2})*"
_RELATIVE = re.compile(
    r"(?:\.?/)?"  # "/" or "./"
    r"(?:(?:[\w-]+|\.\.)/)*"  # path/segments/
    r"([\w-]+(?:\.[\w-]+)?(\.[a-zA-Z0-9]{2,5})?)?"  # a file name, maybe with an extension
    rf"(?:\?{_QNV}(?:&{_QNV})*)?"  # ?query=string
    r"(?:#[\w-]+)?",  # #fragment
    re.ASCII,
)
_MIME_LIKE = re.compile(r"(?:text|application|audio|video|image|font)/[^/]+")
_DECIMAL = re.compile(r"\d+(?:\.\d+)*")
_CSS_SELECTOR = re.compile(r"([^./]+)\.([^./]+)")
_KNOWN_EXTENSIONS = frozenset(
    {".jpg", ".js", ".css", ".png", ".gif", ".swf", ".flv", ".mp4", ".mp3", ".jpeg", ".html"}
    | {".pdf", ".json", ".webp", ".svg", ".htm"}
)
_HTML_TAGS = frozenset(
    [
        "a",
        "abbr",
        "address",
        "article",
        "aside",
        "audio",
        "b",
        "body",
        "br",
        "button",
        "canvas",
        "caption",
        "code",
        "col",
        "dd",
        "div",
        "dl",
        "dt",
        "em",
        "embed",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "html",
        "i",
        "iframe",
        "img",
        "input",
        "label",
        "li",
        "link",
        "main",
        "nav",
        "ol",
        "option",
        "p",
        "picture",
        "pre",
        "section",
        "select",
        "small",
        "source",
        "span",
        "strong",
        "table",
        "tbody",
        "td",
        "textarea",
        "th",
        "thead",
        "tr",
        "ul",
        "video",
    ]
)
_JS_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.DOTALL)
# event-handler attributes and javascript: URLs of an HTML page, in one XPath query
_SCRIPT_XPATH = (
    "//script/text() | //@*[starts-with(name(), 'on')]"
    " | //@href[starts-with(normalize-space(.), 'javascript:')]"
)


def is_very_likely_url(candidate: str) -> bool:
    """Whether a string taken from script is very probably a URL (Heritrix's rules)."""
    if not candidate or not _NAIVE.fullmatch(candidate):
        return False
    if _ABSOLUTE.fullmatch(candidate) or _PROTOCOL_RELATIVE.fullmatch(candidate):
        return True
    match = _RELATIVE.fullmatch(candidate)
    if not match:
        return False
    filename, extension = match.group(1), match.group(2)
    if (
        filename
        and extension
        and filename.count(".") > 1
        and extension.lower() not in _KNOWN_EXTENSIONS
    ):
        return False  # "a.b.c": a property path, not a file
    if _MIME_LIKE.fullmatch(candidate) or _DECIMAL.fullmatch(candidate):
        return False
    selector = _CSS_SELECTOR.fullmatch(candidate)
    return not (selector and selector.group(1).lower() in _HTML_TAGS)


def _unescape(text: str) -> str:
    """JavaScript string escapes (``\\/``, ``\\u002F``, ``\\x2F``) undone."""
    if "\\" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        seq = m.group(1)
        if len(seq) > 1 and seq[0] in "ux":
            return chr(int(seq[1:], 16))
        return {"n": "\n", "t": "\t", "r": "\r"}.get(seq, seq)

    return _JS_ESCAPE.sub(one, text)


def _fixup(candidate: str) -> str:
    """Heritrix's speculative fix-ups: a percent-encoded ``http%3A…``, and a
    scheme-less ``www.host/...`` (Heritrix checks the last label against a TLD list; we only
    trust the ``www.`` prefix, which no relative path has)."""
    if candidate[:8].lower().startswith(("http%3a", "https%3a")):
        candidate = unquote(candidate)
    if candidate[:4].lower() == "www.":
        candidate = "http://" + candidate
    return candidate


def strings_in(code: str, depth: int = 0) -> Iterator[str]:
    """Quoted strings of script ``code`` that look like URLs (unescaped, fixed up)."""
    for match in _JS_STRING.finditer(code):
        inner = match.group(2)
        unescaped = _unescape(inner).replace("&amp;", "&")  # (an HTML-escaped query)
        if is_very_likely_url(unescaped):
            yield _fixup(unescaped)
        elif depth < 2 and ("'" in inner or '"' in inner):
            yield from strings_in(inner, depth + 1)  # a string holding quoted strings


def extract_script(code: str, base: str, context: str) -> list[Link]:
    """Speculative links of a piece of script, resolved against ``base``."""
    out: list[Link] = []
    if "'" not in code and '"' not in code:
        return out
    for raw in strings_in(code):
        try:
            url = urljoin(base, raw)
        except ValueError:
            continue
        if url.startswith(("http://", "https://")):
            out.append((url, SPECULATIVE, context))
    return out


def is_javascript(mime: str, url: str) -> bool:
    """Whether a response is a script (by its Content-Type, else a ``.js`` path)."""
    if mime in JS_MIME_TYPES:
        return True
    path = url.split("?", 1)[0].split("#", 1)[0]
    return mime in ("", "text/plain", "application/octet-stream") and path.endswith(".js")


def _base_of(root: Any, page_url: str) -> str:
    for el in root.iter("base"):
        href = el.get("href")
        if href:
            try:
                return urljoin(page_url, href.strip())
            except ValueError:
                return page_url
    return page_url


def extract_html_scripts(root: Any, page_url: str) -> list[Link]:
    """Speculative links of an HTML page's inline scripts, ``on*`` attributes and
    ``javascript:`` links (an lxml root, as the HTML extractor gets)."""
    try:
        found = root.xpath(_SCRIPT_XPATH)
    except Exception:  # lxml refuses some hostile trees; the page's other links stand
        return []
    if not found:
        return []
    base = _base_of(root, page_url)
    out: list[Link] = []
    for value in found:
        parent = value.getparent()
        if getattr(value, "is_attribute", False):
            tag = parent.tag if parent is not None and isinstance(parent.tag, str) else "*"
            context = f"{tag.lower()}/@{value.attrname}"
        else:
            context = "script"
        out += extract_script(str(value), base, context)
    return out
