"""Dynamic routes of the sample website: the awkward cases a crawler must archive faithfully.

Why separate from the server: each route is a small pure function of (host, path, query,
headers, port) returning a :class:`Reply`, so this module reads as the list of what the site
offers (redirects, cookies, query strings, ETags, slow and large answers, crawler traps, and
the ``www.scaleN.test`` hosts of the scale test); see the route functions below.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
from dataclasses import dataclass, field

from harvestflow.package_data import data_path

SITES_DIR = data_path("app.demo.samplesite", "sites")
TEXT_SUFFIXES = {".html", ".css", ".js", ".txt", ".xml"}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css",
    ".js": "application/javascript",
    ".txt": "text/plain",
    ".xml": "application/xml",
    ".png": "image/png",
    ".gif": "image/gif",
}


@dataclass
class Reply:
    """What a route answers: status, headers (repeats allowed), body and how to send it."""

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[bytes] | None = None  # send with Transfer-Encoding: chunked
    delay_s: float = 0.0


def load_static(host: str, path: str, port: int) -> tuple[bytes, str] | None:
    """The bytes and content type of a static file, with ``__PORT__`` filled in, or None."""
    rel = path.lstrip("/")
    if rel == "" or rel.endswith("/"):
        rel += "index.html"
    base = (SITES_DIR / host).resolve()
    target = (base / rel).resolve()
    if base not in target.parents or not target.is_file():
        return None
    data = target.read_bytes()
    if target.suffix in TEXT_SUFFIXES:
        data = data.replace(b"__PORT__", str(port).encode())
    ctype = CONTENT_TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
    return data, ctype or "application/octet-stream"


HTML = "text/html; charset=utf-8"
ETAG = '"sample-etag-v1"'
LAST_MODIFIED = "Thu, 01 Jan 2026 00:00:00 GMT"
SCALE_HOST = re.compile(r"^www\.scale(\d{1,3})\.test$")
SCALE_PAGES = 3
SCALE_PAGE_DELAY_S = 0.25


def _reply(status: int, body: bytes = b"", headers: list[tuple[str, str]] | None = None) -> Reply:
    return Reply(status, body, headers or [])


def _page(title: str, body: str) -> bytes:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"</head>\n<body><h1>{title}</h1>\n{body}\n</body></html>\n"
    ).encode()


def _redirect(status: int, location: str) -> Reply:
    body = _page("Moved", f'<a href="{location}">{location}</a>')
    return _reply(status, body, [("Location", location), ("Content-Type", HTML)])


def dynamic(
    host: str, path: str, query: dict[str, list[str]], headers: dict[str, str], port: int
) -> Reply | None:
    """The reply of a dynamic route, or None when the path is a static file (or a 404)."""
    base_a = f"http://www.example-a.test:{port}"
    if SCALE_HOST.match(host):
        return _scale_site(host, path)
    if host == "www.example-a.test":
        if path == "/redirect-301":
            return _redirect(301, "/about.html")
        if path == "/redirect-302":
            return _redirect(302, f"{base_a}/section/")
        if path == "/cookies":
            reply = _reply(200, _page("Cookies", "<p>Two cookies were set.</p>"))
            reply.headers += [
                ("Content-Type", HTML),
                ("Set-Cookie", "session=abc123; Path=/"),
                ("Set-Cookie", "theme=dark; Path=/; Max-Age=3600"),
            ]
            return reply
        if path == "/search":
            q = query.get("q", [""])[0]
            page = int(query.get("page", ["1"])[0] or 1)
            links = f'<a href="/search?q={q}&amp;page={page + 1}">next</a>' if page < 3 else ""
            body = _page(f"Search {q} page {page}", f"<p>Results for {q}.</p>{links}")
            return _reply(200, body, [("Content-Type", HTML)])
        if path == "/etag.html":
            found = load_static(host, path, port)
            assert found is not None
            cond = [("ETag", ETAG), ("Last-Modified", LAST_MODIFIED)]
            if headers.get("If-None-Match") == ETAG or (
                headers.get("If-Modified-Since") == LAST_MODIFIED
            ):
                return _reply(304, b"", cond)
            return _reply(200, found[0], [("Content-Type", found[1]), *cond])
        if path == "/slow":
            ms = int(query.get("ms", ["500"])[0])
            reply = _reply(200, _page("Slow", f"<p>{ms} ms</p>"), [("Content-Type", HTML)])
            reply.delay_s = ms / 1000.0
            return reply
    if host == "www.example-b.test":
        return _redirect(301, f"http://example-b.test:{port}{path}")
    if host == "example-b.test" and path == "/moved":
        return _redirect(301, f"{base_a}/about.html")
    if host == "static.example-a.test":
        if path == "/fonts/sample.woff":
            data = b"wOFF" + hashlib.sha256(b"sample font").digest() * 8
            return _reply(200, data, [("Content-Type", "font/woff")])
        if path == "/big.bin":
            size = int(query.get("size", ["200000"])[0])
            block = hashlib.sha256(b"big").digest()
            data = (block * (size // len(block) + 1))[:size]
            return _reply(200, data, [("Content-Type", "application/octet-stream")])
    if host == "trap.example-c.test":
        return _trap(path, query)
    return None


def _trap(path: str, query: dict[str, list[str]]) -> Reply:
    """Crawler traps: every page links to new URLs without end."""
    parts = [p for p in path.split("/") if p]
    if path in ("/", ""):
        body = (
            '<a href="/calendar/2026/11/">Calendar</a> <a href="/shop?sid=0001">Shop</a> '
            '<a href="/loop/">Loop</a> <a href="/deep/1/">Deep</a> <a href="/plain.html">Plain</a>'
        )
        return _reply(200, _page("Trap site", body), [("Content-Type", HTML)])
    if path == "/plain.html":
        return _reply(200, _page("Plain", "<p>An ordinary page.</p>"), [("Content-Type", HTML)])
    if len(parts) == 3 and parts[0] == "calendar" and parts[1].isdigit() and parts[2].isdigit():
        year, month = int(parts[1]), int(parts[2])
        nxt = (year + (month == 12), month % 12 + 1)
        prv = (year - (month == 1), (month - 2) % 12 + 1)
        body = (
            f'<a href="/calendar/{prv[0]}/{prv[1]:02d}/">previous month</a> '
            f'<a href="/calendar/{nxt[0]}/{nxt[1]:02d}/">next month</a>'
        )
        return _reply(200, _page(f"Calendar {year}-{month:02d}", body), [("Content-Type", HTML)])
    if path == "/shop":
        sid = int(query.get("sid", ["0"])[0] or 0)
        body = f'<a href="/shop?sid={sid + 1:04d}">Products</a>'
        return _reply(200, _page("Shop", body), [("Content-Type", HTML)])
    if parts and parts[0] == "loop":
        body = f'<a href="{path.rstrip("/")}/loop/">Again</a>'
        return _reply(200, _page("Loop", body), [("Content-Type", HTML)])
    if parts and parts[0] == "deep":
        body = f'<a href="{path.rstrip("/")}/{len(parts)}/">Deeper</a>'
        return _reply(200, _page("Deep", body), [("Content-Type", HTML)])
    return _reply(404, _page("Not Found", ""), [("Content-Type", HTML)])


def _scale_site(host: str, path: str) -> Reply:
    """One of the many small sites ``www.scaleN.test``: a home page and three linked pages."""
    if path == "/":
        links = "".join(f'<a href="/page/{n}">page {n}</a> ' for n in range(1, SCALE_PAGES + 1))
        return _reply(200, _page(host, f"<p>{links}</p>"), [("Content-Type", HTML)])
    if (m := re.fullmatch(r"/page/(\d+)", path)) and 1 <= int(m.group(1)) <= SCALE_PAGES:
        reply = _reply(
            200, _page(f"{host} {m.group(1)}", "<p>a page</p>"), [("Content-Type", HTML)]
        )
        reply.delay_s = SCALE_PAGE_DELAY_S
        return reply
    return _reply(404, _page("Not Found", "<p>no such page</p>"), [("Content-Type", HTML)])
