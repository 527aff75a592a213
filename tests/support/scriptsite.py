"""A loopback news site that builds itself with JavaScript (for the rendering tests).

The home page is an empty shell. Its script fetches the story list from a JSON API, inserts
each story's thumbnail, sets a background image and a web font, injects an iframe, loads the
second page of stories when the reader scrolls to the bottom, and adds one more story after a
timer; two lazy images below a tall spacer load only when scrolled into view. Each story page
links to an image. No URL of the script-built parts appears in the HTML, and none is a string
of the script that ExtractorJS's rules would take for a URL (paths are joined from pieces).

Served with :func:`compressed` as rawsite's ``negotiate``, every text response is compressed
the way production servers do it (gzip, br, zstd, deflate by Accept-Encoding, ``Vary``).
"""

from __future__ import annotations

import json
import struct
import zlib
from email.message import Message

from tests.support.rawsite import Raw

HOST = "news.scripted.test"
CDN_HOST = "cdn.other.test"
HTML = b"Content-Type: text/html; charset=utf-8"


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG (real, decodable: the browser paints it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    raw = zlib.compress(row * height)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


SHELL = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Scripted news</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head><body>
<h1>Scripted news</h1>
<div id="app"></div>
<div style="height:2400px">spacer</div>
<img class="lazy" data-src="/lazy/a.png" width="40" height="40" alt="lazy a">
<img class="lazy" data-src="/lazy/b.png" width="40" height="40" alt="lazy b">
<div id="end">end</div>
</body></html>
"""

APP_JS = b"""(function () {
  var app = document.getElementById('app');
  var list = document.createElement('ul');
  list.id = 'stories';
  app.appendChild(list);
  function add(story) {
    var li = document.createElement('li');
    var img = document.createElement('img');
    img.src = story.thumb; img.width = 40; img.height = 40; img.className = 'thumb';
    var a = document.createElement('a');
    a.href = story.href; a.textContent = story.title;
    li.appendChild(img); li.appendChild(a); list.appendChild(li);
  }
  var page = 1, more = true, loading = false;
  function load() {
    loading = true;
    fetch(['', 'api', 'stories-' + page + ['', 'json'].join(String.fromCharCode(46))].join('/'))
      .then(function (r) { return r.json(); })
      .then(function (d) { d.stories.forEach(add); more = d.more; page += 1; loading = false; });
  }
  load();
  window.addEventListener('scroll', function () {
    if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 20 && more && !loading) {
      load();
    }
  });
  setTimeout(function () {
    add({href: ['', 'story', 'late'].join('/') + String.fromCharCode(46) + 'html',
         title: 'Late story', thumb: ['', 'thumbs', 'late'].join('/') + String.fromCharCode(46) + 'png'});
  }, 500);
  var dot = String.fromCharCode(46);
  document.body.style.backgroundImage = 'url(' + ['', 'img', 'bg'].join('/') + dot + 'png)';
  var font = new FontFace('Site', 'url(' + ['', 'fonts', 'site'].join('/') + dot + 'woff2)');
  font.load().then(function (f) { document.fonts.add(f); }, function () {});
  var frame = document.createElement('iframe');
  frame.src = ['', 'widget'].join('/') + dot + 'html';
  document.body.appendChild(frame);
  // a tracker the site's robots.txt disallows, and an image on another host (a CDN)
  var tracker = new Image();
  tracker.src = ['', 'private', 'tracker'].join('/') + dot + 'png';
  var cdn = new Image();
  cdn.src = 'http:/' + '/' + ['cdn', 'other', 'test'].join(dot) + ':' + location.port + '/cdn' + dot + 'png';
  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { e.target.src = e.target.dataset.src; observer.unobserve(e.target); }
    });
  });
  document.querySelectorAll('img.lazy').forEach(function (img) { observer.observe(img); });
})();
"""

APP_CSS = b"body { font-family: Site, sans-serif; } .thumb { border: 1px solid #333; }\n"


def _stories(numbers: list[str], more: bool) -> bytes:
    stories = [
        {"href": f"/story/{n}.html", "title": f"Story {n}", "thumb": f"/thumbs/{n}.png"}
        for n in numbers
    ]
    return json.dumps({"stories": stories, "more": more}).encode()


def _story(n: str) -> bytes:
    return (
        f'<html><head><link rel="stylesheet" href="/app.css"></head>'
        f'<body><h1>Story {n}</h1><img src="/img/story-{n}.png"></body></html>'
    ).encode()


STORIES = ["1", "2", "3", "4", "late"]
ROUTES: dict[str, Raw] = {
    "/": Raw(SHELL, [HTML]),
    "/robots.txt": Raw(b"User-agent: *\nDisallow: /private/\n", [b"Content-Type: text/plain"]),
    "/app.js": Raw(APP_JS, [b"Content-Type: application/javascript"]),
    "/app.css": Raw(APP_CSS, [b"Content-Type: text/css"]),
    "/api/stories-1.json": Raw(_stories(["1", "2"], True), [b"Content-Type: application/json"]),
    "/api/stories-2.json": Raw(_stories(["3", "4"], False), [b"Content-Type: application/json"]),
    "/img/bg.png": Raw(png(8, 8, (240, 240, 200)), [b"Content-Type: image/png"]),
    "/fonts/site.woff2": Raw(b"wOF2 not really a font", [b"Content-Type: font/woff2"]),
    "/widget.html": Raw(b'<html><body><img src="/img/widget.png"></body></html>', [HTML]),
    "/img/widget.png": Raw(png(4, 4, (0, 128, 0)), [b"Content-Type: image/png"]),
    "/lazy/a.png": Raw(png(6, 6, (200, 0, 0)), [b"Content-Type: image/png"]),
    "/lazy/b.png": Raw(png(6, 6, (0, 0, 200)), [b"Content-Type: image/png"]),
}
for _i, _n in enumerate(STORIES):
    ROUTES[f"/story/{_n}.html"] = Raw(_story(_n), [HTML])
    ROUTES[f"/thumbs/{_n}.png"] = Raw(
        png(40, 40, (10 * _i, 100, 150)), [b"Content-Type: image/png"]
    )
    ROUTES[f"/img/story-{_n}.png"] = Raw(png(5, 5, (50, 10 * _i, 50)), [b"Content-Type: image/png"])

# everything a rendered crawl must capture; what the plain crawler alone finds
ALL_PATHS = sorted(ROUTES)
PLAIN_PATHS = ["/", "/app.css", "/app.js", "/robots.txt"]
CDN_PNG = png(3, 3, (1, 2, 3))


# --- served as production servers serve it ------------------------------------------------------
# Content-Encoding of each text path when the client accepts it (nginx's gzip_types on every
# text type, with its brotli and zstd modules; one encoding per path so that one crawl meets
# every one: the app script in br, the API's pages in zstd and stacked "gzip, br", the
# stylesheet in zlib deflate and robots.txt in raw deflate as old IIS sends it); the others gzip
CODINGS = {
    "/app.js": "br",
    "/api/stories-1.json": "zstd",
    "/api/stories-2.json": "gzip, br",
    "/app.css": "deflate",
    "/robots.txt": "deflate-raw",
    "/widget.html": "zstd",
}
TEXT_TYPES = (b"text/", b"application/javascript", b"application/json", b"+xml", b"/xml")


def encode_as(coding: str, body: bytes) -> bytes:
    """``body`` in one content coding (``deflate-raw``: deflate without its zlib header)."""
    import gzip

    import brotli
    from backports import zstd

    if coding == "gzip":
        return gzip.compress(body, mtime=0)
    if coding == "br":
        return brotli.compress(body)
    if coding == "zstd":
        return zstd.compress(body)
    if coding == "deflate":
        return zlib.compress(body)
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)  # deflate-raw: no zlib header
    return raw.compress(body) + raw.flush()


def encoded(path: str, raw: Raw) -> tuple[bytes, str] | None:
    """The body of a text response as the compressing server sends it, and its
    Content-Encoding value (None: a type it does not compress)."""
    ctype = next((h for h in raw.headers if h.lower().startswith(b"content-type:")), b"")
    if raw.status != 200 or not any(t in ctype.lower() for t in TEXT_TYPES):
        return None
    coding = CODINGS.get(path.split("?", 1)[0], "gzip")
    body = raw.body
    for step in coding.split(", "):  # applied in the order listed
        body = encode_as(step, body)
    return body, coding.replace("deflate-raw", "deflate")


def compressed(path: str, raw: Raw, headers: Message) -> Raw:
    """``raw`` compressed when the client accepts the path's encoding (every coding of it),
    with ``Vary: Accept-Encoding`` on every text response: rawsite's ``negotiate``."""
    sent = encoded(path, raw)
    if sent is None:
        return raw
    body, coding = sent
    vary = [*raw.headers, b"Vary: Accept-Encoding"]
    accepted = {
        token.split(";")[0].strip().lower()
        for token in (headers.get("Accept-Encoding") or "").split(",")
    }
    if not set(coding.split(", ")) <= accepted:
        return Raw(raw.body, vary, raw.status)
    return Raw(body, [*vary, b"Content-Encoding: " + coding.encode()], raw.status)


def route(host: str, path: str) -> Raw | None:
    if host == CDN_HOST:
        return Raw(CDN_PNG, [b"Content-Type: image/png"]) if path == "/cdn.png" else None
    return ROUTES.get(path) if host == HOST else None
