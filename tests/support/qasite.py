"""A site for the capture-vs-replay QA pass: pages that replay perfectly, and the three ways a
replay goes wrong that the QA pass must tell apart.

- ``/`` and ``/perfect.html``: text, a stylesheet and an image in the HTML: perfect replays;
- ``/scripted.html``: its script alone asks for ``/img/flaky.png`` (no plain-crawl link to
  it), shown below the fold (after a spacer taller than the viewport), and the server drops
  the connection for the first ``FLAKY_DROPS`` requests of it: the capture's fetch fails, the
  replay misses it, the QA patch fetches it (then the page is whole);
- ``/once.html``: its script asks for ``/img/once.png?token=<random>`` (a one-time URL) and the
  server answers the first request only, then 403: the replay asks a new token, the patch is
  refused, the URL stays missing;
- ``/broken.html``: its script fetches ``/api/feed.json?ts=<now>`` (a cache-buster) and, when
  that fails, empties the page and throws: the replay breaks by script.

Every URL a script builds is joined at run time, so the crawler's script extractor cannot find
it (only a browser asks for it). Text types are gzipped (``scriptsite.compressed``).
"""

from __future__ import annotations

import threading

from tests.support.rawsite import Raw
from tests.support.scriptsite import png

HOST = "qa.site.test"
FLAKY_DROPS = 2  # the template's retries (1) + 1: the capture's fetch fails
HTML = b"Content-Type: text/html; charset=utf-8"
PNG = b"Content-Type: image/png"
WORDS = (
    b"The national web archive keeps what was published on the web for readers of the future."
    b" Curators select sites, crawlers capture them, and the reading room replays them.\n"
)


def _page(title: bytes, body: bytes) -> bytes:
    return (
        b'<!doctype html><html><head><meta charset="utf-8"><title>' + title + b"</title>"
        b'<link rel="icon" href="data:,"><link rel="stylesheet" href="/style.css"></head>'
        b"<body><h1>" + title + b"</h1><p>" + WORDS * 3 + b"</p>" + body + b"</body></html>"
    )


SCRIPT_IMAGE = (
    b"<script>var dot = String.fromCharCode(46), i = new Image(); i.width = 400; i.height = 300;"
    b" i.src = ['', 'img', NAME].join('/') + dot + 'png' + QUERY; document.body.appendChild(i);"
    b"</script>"
)
SPACER = b'<div style="height:1200px">spacer</div>'  # what follows is below the fold
BROKEN = (
    b'<div id="feed">loading</div><p>' + WORDS * 4 + b"</p><script>"
    b"fetch(['', 'api', 'feed'].join('/') + String.fromCharCode(46) + 'json?ts=' + Date.now())"
    b".then(function (r) { if (!r.ok) { throw new Error('feed unavailable'); } return r.json(); })"
    b".then(function (d) { document.getElementById('feed').textContent = d.title; })"
    b".catch(function (e) { document.body.innerHTML = '';"
    b" setTimeout(function () { throw e; }, 0); });</script>"
)


class QaSite:
    """The routes, with the flaky and one-time resources' state (one site per test)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.flaky_asked = 0
        self.once_asked = 0

    def route(self, host: str, path: str) -> Raw | None:
        if host != HOST:
            return None
        plain, _, _query = path.partition("?")
        if plain == "/":
            links = b"".join(
                b'<li><a href="/' + p + b'.html">' + p + b"</a></li>"
                for p in (b"perfect", b"scripted", b"once", b"broken")
            )
            return Raw(_page(b"QA site", b"<ul>" + links + b"</ul>"), [HTML])
        if plain == "/perfect.html":
            img = b'<img src="/img/blue.png" width="400" height="300" alt="blue">'
            return Raw(_page(b"Perfect page", img), [HTML])
        if plain == "/scripted.html":
            script = SCRIPT_IMAGE.replace(b"NAME", b"'flaky'").replace(b"QUERY", b"''")
            return Raw(_page(b"Scripted image", SPACER + script), [HTML])
        if plain == "/once.html":
            token = b"'?token=' + Math.random().toString(36).slice(2)"
            script = SCRIPT_IMAGE.replace(b"NAME", b"'once'").replace(b"QUERY", token)
            return Raw(_page(b"One-time image", script), [HTML])
        if plain == "/broken.html":
            return Raw(_page(b"Broken by script", BROKEN), [HTML])
        if plain == "/style.css":
            return Raw(b"body { font-family: sans-serif; color: #222; } h1 { color: #036; }\n",
                       [b"Content-Type: text/css"])  # fmt: skip
        if plain == "/img/blue.png":
            return Raw(png(400, 300, (20, 60, 200)), [PNG])
        if plain == "/img/flaky.png":
            with self.lock:
                self.flaky_asked += 1
                if self.flaky_asked <= FLAKY_DROPS:
                    return Raw(hang_up=True)
            return Raw(png(400, 300, (200, 30, 30)), [PNG])
        if plain == "/img/once.png":
            with self.lock:
                self.once_asked += 1
                if self.once_asked > 1:
                    return Raw(b"used", [b"Content-Type: text/plain"], 403)
            return Raw(png(400, 300, (30, 160, 40)), [PNG])
        if plain == "/api/feed.json":
            return Raw(b'{"title": "Feed of the day"}', [b"Content-Type: application/json"])
        return None
