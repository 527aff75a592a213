"""A loopback site whose content waits for a reader's actions (for the behaviour tests).

- three consent walls, each keeping its story (a JSON API, then the story's image) back until
  accepted: ``/onetrust.html`` (OneTrust's markup, which autoconsent's ``Onetrust`` rule knows:
  ``#onetrust-banner-sdk``, ``#onetrust-accept-btn-handler``, ``#onetrust-reject-all-handler``;
  its buttons' labels are in no wording table, so only the rule can answer it), ``/mot.html``
  (on ``MOT_HOST``: a plain fixed banner in French, "Tout accepter" / "Tout refuser"), ``/cadre.html`` (on
  ``CADRE_HOST``: the dialog in a cross-site iframe of ``CMP_HOST``, in German, answering its page by
  ``postMessage``); ``/onetrust-2.html`` (linked from the first) shows its story at once when
  the consent cookie is there — the host's answer kept;
- ``/more.html``: a list of three items and a "Load more" button loading three more per click
  from ``/api/list-N.json`` (with an image each), ``PAGES`` pages, then the button goes;
- ``/expand.html``: a ``<details>``, an accordion button and a tab, each loading its panel's
  image only when opened;
- ``/media.html``: ``srcset`` and ``<picture>`` candidates the browser does not choose, a lazy
  ``data-src`` image, a poster, an audio clip (a real WAV, ``preload=none``);
- ``/special.html``: a panel shown only by a button no wording table knows (a site behaviour);
- ``/leave.html``: an "expander" whose click loads ``/gone.html`` in its place, and a link
  its script adds (``/kept.html``: in the rendered DOM only when the page is itself again).

Served with ``scriptsite.compressed`` (every text type compressed, as production servers do).
"""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path

from tests.support.crawl import FAST_TEMPLATE, CrawlResult, run_crawl
from tests.support.rawsite import Raw, serve
from tests.support.scriptsite import compressed, png

HOST = "behave.site.test"
# each consent wall on a host of its own (a host's answer is kept for its other pages)
MOT_HOST = "mot.site.test"
CADRE_HOST = "cadre.site.test"
CMP_HOST = "cmp.consent.test"
HTML = b"Content-Type: text/html; charset=utf-8"
JS = b"Content-Type: application/javascript"
JSON = b"Content-Type: application/json"
PNG = b"Content-Type: image/png"
PAGES = 4  # "Load more" pages (the first is in the HTML)
WALLS = ("onetrust", "mot", "cadre", "onetrust-2")

# the story behind each wall: fetched only once the page's consent is given
CONSENT_JS = b"""(function () {
  var page = document.body.getAttribute('data-page');
  function reveal() {
    fetch('/api/story-' + page + '.json').then(function (r) { return r.json(); }).then(function (d) {
      var img = document.createElement('img');
      img.src = d.image; img.width = 60; img.height = 40; img.alt = d.title;
      var main = document.getElementById('story');
      main.textContent = d.title;
      main.appendChild(img);
    });
  }
  function answer(yes) {
    document.cookie = 'consent=' + (yes ? 'yes' : 'no') + '; path=/';
    var wall = document.querySelector('[data-wall]');
    if (wall) wall.remove();
    if (yes) reveal();
  }
  if (document.cookie.indexOf('consent=yes') >= 0) {
    var wall = document.querySelector('[data-wall]');
    if (wall) wall.remove();
    reveal();
    return;
  }
  var yes = document.querySelector('[data-yes]'), no = document.querySelector('[data-no]');
  if (yes) yes.addEventListener('click', function () { answer(true); });
  if (no) no.addEventListener('click', function () { answer(false); });
  window.addEventListener('message', function (e) {
    if (e.data === 'consent:yes' || e.data === 'consent:no') answer(e.data === 'consent:yes');
  });
  if (page === 'cadre') {
    var f = document.createElement('iframe');
    f.setAttribute('data-wall', '');
    f.title = 'consent';
    f.src = 'http://' + 'cmp.consent.test:' + location.port + '/dialog.html';
    f.style.cssText = 'position:fixed;bottom:0;left:0;width:100%;height:160px;border:0;background:#fff';
    document.body.appendChild(f);
  }
})();
"""

BANNER_CSS = "position:fixed;bottom:0;left:0;right:0;padding:16px;background:#eee;z-index:9999"


def _wall_page(page: str, banner: str, extra: str = "") -> bytes:
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Wall {page}</title></head>
<body data-page="{page}">
<h1>Story behind a consent wall</h1>
<main id="story">(the story appears once you accept)</main>
{extra}
{banner}
<script src="/consent.js"></script>
</body></html>
""".encode()


ONETRUST_BANNER = f"""<div id="onetrust-consent-sdk">
<div id="onetrust-banner-sdk" data-wall style="{BANNER_CSS}">
<p>We and our partners use cookies to personalise content.</p>
<button id="onetrust-accept-btn-handler" data-yes>Sure, fine by me</button>
<button id="onetrust-reject-all-handler" data-no>Not for me</button>
</div></div>"""

MOT_BANNER = f"""<div class="bandeau-vie-privee" data-wall style="{BANNER_CSS}">
<p>Ce site utilise des cookies pour mesurer son audience et vous proposer des vidéos.</p>
<button class="b1" data-yes>Tout accepter</button>
<button class="b2" data-no>Tout refuser</button>
</div>"""

DIALOG = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Einwilligung</title></head>
<body style="margin:0;font-family:sans-serif">
<p>Wir verwenden Cookies und vergleichbare Technologien.</p>
<button id="ja">Alle akzeptieren</button> <button id="nein">Alle ablehnen</button>
<script>
document.getElementById('ja').onclick = function () { parent.postMessage('consent:yes', '*'); };
document.getElementById('nein').onclick = function () { parent.postMessage('consent:no', '*'); };
</script>
</body></html>
"""

MORE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>A list</title></head><body>
<h1>Latest</h1>
<ul id="list"><li>Item 1</li><li>Item 2</li><li>Item 3</li></ul>
<button id="more" type="button">Load more</button>
<script>
var next = 2;
document.getElementById('more').addEventListener('click', function () {
  fetch('/api/list-' + next + '.json').then(function (r) { return r.json(); }).then(function (d) {
    var ul = document.getElementById('list');
    d.items.forEach(function (it) {
      var li = document.createElement('li');
      var img = document.createElement('img');
      img.src = it.image; img.width = 20; img.height = 20;
      li.textContent = it.title; li.appendChild(img); ul.appendChild(li);
    });
    next++;
    if (!d.more) document.getElementById('more').remove();
  });
});
</script>
</body></html>
"""

EXPAND = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Panels</title></head><body>
<h1>Questions</h1>
<details id="faq"><summary>Why?</summary><div id="faq-body"></div></details>
<button id="acc" aria-expanded="false" aria-controls="acc-panel">Section two</button>
<div id="acc-panel" hidden></div>
<div role="tablist">
  <button role="tab" aria-selected="true" id="t1">Overview</button>
  <button role="tab" aria-selected="false" id="t2">Details</button>
</div>
<div id="tab-panel"></div>
<script>
function load(name, where) {
  fetch('/api/panel-' + name + '.json').then(function (r) { return r.json(); }).then(function (d) {
    var img = document.createElement('img'); img.src = d.image; img.width = 20; img.height = 20;
    var box = document.getElementById(where); box.hidden = false; box.appendChild(img);
  });
}
document.getElementById('faq').addEventListener('toggle', function (e) {
  if (e.target.open) load('details', 'faq-body');
});
document.getElementById('acc').addEventListener('click', function () {
  this.setAttribute('aria-expanded', 'true'); load('accordion', 'acc-panel');
});
document.getElementById('t2').addEventListener('click', function () {
  this.setAttribute('aria-selected', 'true');
  document.getElementById('t1').setAttribute('aria-selected', 'false');
  load('tab', 'tab-panel');
});
</script>
</body></html>
"""

MEDIA = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Media</title></head><body>
<h1>Pictures and sound</h1>
<img src="/img/s.png" srcset="/img/s-1x.png 1x, /img/s-2x.png 2x" width="40" height="40" alt="s">
<img src="/img/w-small.png" srcset="/img/w-small.png 200w, /img/w-large.png 1600w"
  sizes="40px" width="40" height="40" alt="w">
<picture>
  <source media="(max-width: 500px)" srcset="/img/p-phone.png">
  <img src="/img/p.png" width="40" height="40" alt="p">
</picture>
<img class="lazyload" data-src="/img/lazy.png" width="40" height="40" alt="lazy">
<video width="80" height="60" preload="none" poster="/img/poster.png" muted>
  <source src="/media/clip.webm" type="video/webm">
</video>
<audio id="clip" preload="none" controls><source src="/media/clip.wav" type="audio/wav"></audio>
</body></html>
"""

SPECIAL = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Special</title></head><body>
<h1>A site that needs a curator's behaviour</h1>
<span id="reveal" style="cursor:pointer">Open the reading room</span>
<div id="room"></div>
<script>
document.getElementById('reveal').addEventListener('click', function () {
  fetch('/api/special.json').then(function (r) { return r.json(); }).then(function (d) {
    var img = document.createElement('img'); img.src = d.image; img.width = 20; img.height = 20;
    document.getElementById('room').appendChild(img);
  });
});
</script>
</body></html>
"""

# an expander whose click goes elsewhere (a script's location change)
LEAVE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Leaves</title></head><body>
<h1 id="title">A page that must stay itself</h1>
<button aria-expanded="false" onclick="location.href = '/gone.html'">Section</button>
<script>document.body.insertAdjacentHTML('beforeend', '<a href="/k' + 'ept.html">kept</a>');</script>
</body></html>
"""
GONE = b"""<!doctype html><html><head><title>Gone</title></head><body><h1>Elsewhere</h1></body></html>
"""

SPECIAL_BEHAVIOUR = """// @match /special\\.html$
// @name reading-room
// @timeout 5
const button = document.querySelector('#reveal');
if (!button) return 0;
hf.click(button);
await hf.sleep(200);
return 1;
"""


def _wav(seconds: float = 0.5, rate: int = 8000) -> bytes:
    """A real (silent) WAV clip the browser plays."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(rate)
        w.writeframes(b"\x80" * int(seconds * rate))
    return buf.getvalue()


def _json(data: object) -> Raw:
    return Raw(json.dumps(data).encode(), [JSON])


def story_image(page: str) -> str:
    return f"/img/story-{page}.png"


def list_image(n: int) -> str:
    return f"/img/item-{n}.png"


PANELS = ("details", "accordion", "tab")
MEDIA_PATHS = (
    "/img/s-2x.png",
    "/img/w-large.png",
    "/img/p-phone.png",
    "/img/lazy.png",
    "/img/poster.png",
    "/media/clip.wav",
)


def _routes() -> dict[str, Raw]:
    routes: dict[str, Raw] = {
        "/robots.txt": Raw(b"User-agent: *\nDisallow:\n", [b"Content-Type: text/plain"]),
        "/consent.js": Raw(CONSENT_JS, [JS]),
        "/onetrust.html": _wall_page(
            "onetrust", ONETRUST_BANNER, '<a href="/onetrust-2.html">next story</a>'
        ),
        "/onetrust-2.html": _wall_page("onetrust-2", ONETRUST_BANNER),
        "/mot.html": _wall_page("mot", MOT_BANNER),
        "/cadre.html": _wall_page("cadre", ""),
        "/more.html": MORE,
        "/expand.html": EXPAND,
        "/media.html": MEDIA,
        "/special.html": SPECIAL,
        "/leave.html": LEAVE,
        "/gone.html": GONE,
        "/api/special.json": {"image": "/img/special.png"},
        "/media/clip.wav": Raw(_wav(), [b"Content-Type: audio/wav"]),
        "/media/clip.webm": Raw(b"\x1a\x45\xdf\xa3", [b"Content-Type: video/webm"]),
    }
    for page in WALLS:
        routes[f"/api/story-{page}.json"] = {"title": f"Story {page}", "image": story_image(page)}
    for n in range(2, PAGES + 1):
        items = [
            {"title": f"Item {i}", "image": list_image(i)} for i in range(3 * n - 2, 3 * n + 1)
        ]
        routes[f"/api/list-{n}.json"] = {"items": items, "more": n < PAGES}
    for name in PANELS:
        routes[f"/api/panel-{name}.json"] = {"image": f"/img/panel-{name}.png"}
    out: dict[str, Raw] = {}
    for path, value in routes.items():
        if isinstance(value, bytes):
            out[path] = Raw(value, [HTML])
        elif isinstance(value, dict):
            out[path] = _json(value)
        else:
            out[path] = value
    return out


ROUTES = _routes()
IMAGE = png(8, 8, (200, 40, 40))


def route(host: str, path: str) -> Raw | None:
    if host == CMP_HOST:
        return Raw(DIALOG, [HTML]) if path == "/dialog.html" else None
    if host not in (HOST, MOT_HOST, CADRE_HOST):
        return None
    if path in ROUTES:
        return ROUTES[path]
    if path.startswith("/img/") and path.endswith(".png"):
        return Raw(IMAGE, [PNG])
    return None


def crawl(
    out: Path,
    seeds: tuple[str, ...],
    walls: tuple[tuple[str, str], ...] = (),
    job_id: int = 28,
    harvest_id: int = 2,
    **template: object,
) -> tuple[CrawlResult, str, set[str]]:
    """Crawl ``seeds`` (paths of ``HOST``) and the consent ``walls`` (host, path) with every
    in-scope page rendered, in one tab (a host's pages one after the other), the site served
    compressed and stopped afterwards; the result, ``HOST``'s URL prefix and the URLs of the
    WARC's response records."""
    with serve(route, negotiate=compressed) as site:
        prefix = site.url(HOST, "")
        job = {
            "job_id": job_id,
            "harvest_id": harvest_id,
            "seeds": [prefix + s for s in seeds] + [site.url(h, p) for h, p in walls],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 1,
                "render": "html",
                "render_tabs": 1,
                "render_min_wait_s": 0.5,
                "render_page_timeout_s": 25,
                **template,
            },
            "resolve": {h: "127.0.0.1" for h in (HOST, MOT_HOST, CADRE_HOST, CMP_HOST)},
        }
        result = run_crawl(job, out, timeout=240)
    return result, prefix, result.response_uris()
