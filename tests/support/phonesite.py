"""A responsive loopback page whose phone layout loads what its desktop layout does not (for
the phone pass, crawler/rendering/phone.py).

``/`` (host ``HOST``) is built by its script: a ``<picture>`` whose ``(max-width: 600px)``
source is the phone's image, a banner whose background image a media query chooses, and one
more image named by ``/api/phone.json``, asked for only when the browser says it is a phone
(user agent and touch). Served with ``scriptsite.compressed`` (every text type compressed).
"""

from __future__ import annotations

import json

from tests.support.rawsite import Raw
from tests.support.scriptsite import png

HOST = "phone.site.test"
PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Responsive</title><link rel="icon" href="data:,">
<script src="/layout.js" defer></script></head>
<body><h1>Responsive</h1><picture id="pic"></picture>
<div class="banner">banner</div><div id="extra"></div>
</body></html>
"""
# builds the page's responsive parts (no URL of them is in a static text: the plain crawl's
# link extraction finds none, only a layout that loads them does)
LAYOUT_JS = b"""(function () {
  var dot = String.fromCharCode(46);
  function img(name) { return ['', 'img', name].join('/') + dot + 'png'; }
  document.getElementById('pic').innerHTML =
    '<source media="(max-width: 600px)" srcset="' + img('pic-phone') + '">' +
    '<img src="' + img('pic-desk') + '" width="40" height="40" alt="picture">';
  var style = document.createElement('style');
  style.textContent = '.banner { height: 40px; background-image: url(' + img('banner-desk') +
    '); } @media (max-width: 600px) { .banner { background-image: url(' +
    img('banner-phone') + '); } }';
  document.head.appendChild(style);
  if (!/Android.*Mobile/.test(navigator.userAgent) || navigator.maxTouchPoints < 1) return;
  fetch(['', 'api', 'phone' + dot + 'json'].join('/')).then(function (r) {
    return r.json();
  }).then(function (d) {
    var el = document.createElement('img');
    el.src = img(d.name); el.width = 20; el.height = 20;
    document.getElementById('extra').appendChild(el);
  });
})();
"""
DESKTOP_ONLY = ("/img/pic-desk.png", "/img/banner-desk.png")
PHONE_ONLY = ("/img/pic-phone.png", "/img/banner-phone.png", "/api/phone.json", "/img/ua.png")
ROUTES = {
    "/": Raw(PAGE, [b"Content-Type: text/html; charset=utf-8"]),
    "/layout.js": Raw(LAYOUT_JS, [b"Content-Type: application/javascript"]),
    "/api/phone.json": Raw(
        json.dumps({"name": "ua"}).encode(), [b"Content-Type: application/json"]
    ),
    "/robots.txt": Raw(b"User-agent: *\nDisallow:\n", [b"Content-Type: text/plain"]),
}
IMAGE = Raw(png(6, 6, (30, 120, 200)), [b"Content-Type: image/png"])


def route(host: str, path: str) -> Raw | None:
    if host != HOST:
        return None
    if path.startswith("/img/") and path.endswith(".png"):
        return IMAGE
    return ROUTES.get(path)
