"""A generated loopback site of N script-built pages (after tests/crawler/scriptsite.py).

Page ``/p/N.html`` is a shell: its script (shared ``/app.js``) fetches ``/api/N.json``, inserts
three thumbnails and three links to other pages, loads ``/api/N-more.json`` (one more
thumbnail) when the reader scrolls to the bottom, and a lazy image below a tall spacer loads
only when scrolled into view, and a "Load more" button loads ``/api/N-extra.json`` (two more
thumbnails) when clicked: what a reader who clicks sees, and a recorder that only loads and
scrolls (the peer) misses. No script-built URL is in the HTML. Served by a threaded
``http.server`` on 127.0.0.1 (any Host header), HTTP/1.1 with keep-alive, every text type
gzip-compressed when the client accepts it (as nginx's ``gzip_types`` and CDNs serve them).
"""

from __future__ import annotations

import gzip
import json
import struct
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

THUMBS = 3
EXTRA = 2  # thumbnails the "Load more" button adds
TEXT_TYPES = ("text/", "application/javascript", "application/json")


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG the browser can decode and paint."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = zlib.compress((b"\x00" + bytes(rgb) * width) * height)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


APP_JS = b"""(function () {
  var app = document.getElementById('app');
  var n = app.dataset.n, dot = String.fromCharCode(46);
  var list = document.createElement('ul');
  app.appendChild(list);
  function add(item) {
    var li = document.createElement('li');
    var img = document.createElement('img');
    img.src = item.thumb; img.width = 40; img.height = 40;
    li.appendChild(img);
    if (item.href) {
      var a = document.createElement('a'); a.href = item.href; a.textContent = item.title;
      li.appendChild(a);
    }
    list.appendChild(li);
  }
  function load(name, then) {
    fetch(['', 'api', name + dot + 'json'].join('/'))
      .then(function (r) { return r.json(); })
      .then(function (d) { d.items.forEach(add); if (then) then(); });
  }
  var more = false;
  load(n);
  window.addEventListener('scroll', function () {
    if (!more && window.innerHeight + window.scrollY >= document.body.scrollHeight - 20) {
      more = true; load(n + '-more');
    }
  });
  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { e.target.src = e.target.dataset.src; observer.unobserve(e.target); }
    });
  });
  document.querySelectorAll('img.lazy').forEach(function (img) { observer.observe(img); });
  var button = document.getElementById('more');
  button.addEventListener('click', function () {
    button.remove(); load(n + '-extra');
  });
})();
"""
APP_CSS = b"body { font-family: sans-serif; } img { border: 1px solid #333; }\n"


def _page(n: int) -> bytes:
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>Page {n}</title>'
        '<link rel="stylesheet" href="/app.css"><script src="/app.js" defer></script></head>'
        f'<body><h1>Page {n}</h1><div id="app" data-n="{n}"></div>'
        '<button id="more" type="button">Load more</button>'
        '<div style="height:2400px">spacer</div>'
        f'<img class="lazy" data-src="/lazy/{n}.png" width="40" height="40" alt="lazy">'
        "</body></html>"
    ).encode()


def routes(pages: int) -> dict[str, tuple[bytes, str]]:
    """Every URL path of the site with its body and Content-Type."""
    out: dict[str, tuple[bytes, str]] = {
        "/app.js": (APP_JS, "application/javascript"),
        "/app.css": (APP_CSS, "text/css"),
    }
    for n in range(pages):
        out[f"/p/{n}.html"] = (_page(n), "text/html; charset=utf-8")
        items = [
            {
                "thumb": f"/thumbs/{n}-{k}.png",
                "href": f"/p/{(n + k + 1) % pages}.html",
                "title": f"Page {(n + k + 1) % pages}",
            }
            for k in range(THUMBS)
        ]
        out[f"/api/{n}.json"] = (json.dumps({"items": items}).encode(), "application/json")
        more = {"items": [{"thumb": f"/thumbs/{n}-more.png"}]}
        out[f"/api/{n}-more.json"] = (json.dumps(more).encode(), "application/json")
        extra = {"items": [{"thumb": f"/thumbs/{n}-extra{k}.png"} for k in range(EXTRA)]}
        out[f"/api/{n}-extra.json"] = (json.dumps(extra).encode(), "application/json")
        thumbs = [*map(str, range(THUMBS)), "more", *(f"extra{k}" for k in range(EXTRA))]
        for k in thumbs:
            out[f"/thumbs/{n}-{k}.png"] = (png(40, 40, (n % 256, 100, 150)), "image/png")
        out[f"/lazy/{n}.png"] = (png(6, 6, (200, n % 256, 0)), "image/png")
    return out


class Site:
    """The site served on 127.0.0.1:port in a thread of the benchmark's process."""

    def __init__(self, pages: int) -> None:
        self.routes = routes(pages)
        table = self.routes
        packed = {
            path: gzip.compress(body, 6)
            for path, (body, ctype) in self.routes.items()
            if ctype.startswith(TEXT_TYPES)
        }

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                found = table.get(self.path.split("?", 1)[0])
                path = self.path.split("?", 1)[0]
                body, ctype = found if found else (b"not found\n", "text/plain")
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", ctype)
                if path in packed:
                    self.send_header("Vary", "Accept-Encoding")
                    if "gzip" in self.headers.get("Accept-Encoding", ""):
                        body = packed[path]
                        self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
