"""A page playing a DASH stream of real video with a small MediaSource player, next to
tests/support/hlssite.py's HLS page on the same site (one crawl and one replay for both).

Why a player script: Chromium plays HLS itself but not DASH; a DASH page brings its player
(dash.js, Shaka), which reads the MPD with ``fetch`` and appends the segments it names to a
``SourceBuffer``. ``/play.html``'s inline player does that much: it fetches ``/dash/film.mpd``,
takes its highest-bandwidth representation, fills the ``SegmentTemplate`` (``$Number$`` from
``startNumber``, as many segments as the presentation's duration holds) and appends the init
section and every segment. The MPD names a low and a high representation, each the same fMP4
init section and segments (``hlssite.split`` of the film). Served with
``scriptsite.compressed`` (the MPD and the page are text: compressed as production servers do).
"""

from __future__ import annotations

from pathlib import Path

from tests.support import hlssite
from tests.support.crawl import FAST_TEMPLATE, CrawlResult, run_crawl
from tests.support.rawsite import Raw, RawSite, serve
from tests.support.scriptsite import compressed

HOST = hlssite.HOST
REPRESENTATIONS = (("low", 150000), ("high", 600000))
MPD_TYPE = b"Content-Type: application/dash+xml"
PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Play</title>
<link rel="icon" href="data:,"></head>
<body><h1>Play</h1>
<video id="film" muted playsinline width="64" height="48"></video>
<script>
(function () {
  var video = document.getElementById('film');
  var source = new MediaSource();
  video.src = URL.createObjectURL(source);
  function bytes(url) {
    return fetch(url).then(function (r) {
      if (!r.ok) { throw new Error(url + ': ' + r.status); }
      return r.arrayBuffer();
    });
  }
  function append(buffer, data) {
    return new Promise(function (done) {
      buffer.addEventListener('updateend', done, {once: true});
      buffer.appendBuffer(data);
    });
  }
  function seconds(iso) {
    var m = /PT(?:([0-9.]+)M)?(?:([0-9.]+)S)?/.exec(iso || '');
    return m ? Number(m[1] || 0) * 60 + Number(m[2] || 0) : 0;
  }
  source.addEventListener('sourceopen', function () {
    fetch('/dash/film.mpd').then(function (r) { return r.text(); }).then(function (text) {
      var mpd = new DOMParser().parseFromString(text, 'application/xml');
      var set = mpd.getElementsByTagName('AdaptationSet')[0];
      var reps = Array.from(set.getElementsByTagName('Representation'));
      reps.sort(function (a, b) { return b.getAttribute('bandwidth') - a.getAttribute('bandwidth'); });
      var rep = reps[0], id = rep.getAttribute('id');
      var tpl = set.getElementsByTagName('SegmentTemplate')[0];
      var each = Number(tpl.getAttribute('duration')) / Number(tpl.getAttribute('timescale') || 1);
      var total = seconds(mpd.documentElement.getAttribute('mediaPresentationDuration'));
      var first = Number(tpl.getAttribute('startNumber') || 1);
      function url(template, n) {
        return '/dash/' + template.replace('$RepresentationID$', id).replace('$Number$', n);
      }
      var buffer = source.addSourceBuffer(
        set.getAttribute('mimeType') + '; codecs="' + rep.getAttribute('codecs') + '"');
      var chain = bytes(url(tpl.getAttribute('initialization'), 0))
        .then(function (data) { return append(buffer, data); });
      for (var i = 0; i < Math.ceil(total / each); i++) {
        (function (n) {
          chain = chain.then(function () { return bytes(url(tpl.getAttribute('media'), n)); })
            .then(function (data) { return append(buffer, data); });
        })(first + i);
      }
      return chain.then(function () { source.endOfStream(); });
    }).catch(function (e) { document.title = 'player failed: ' + e; });
  });
})();
</script>
</body></html>
"""


def codecs(init: bytes) -> str:
    """The RFC 6381 codecs value of an H.264 init section (from its ``avcC`` box)."""
    at = init.index(b"avcC") + 4
    return "avc1." + init[at + 1 : at + 4].hex()


def mpd(init: bytes, segments: int) -> bytes:
    """A static MPD of one adaptation set: the low and high representations, one-second
    segments numbered from 0."""
    reps = "".join(
        f'<Representation id="{name}" bandwidth="{bandwidth}" codecs="{codecs(init)}"'
        ' width="64" height="48"/>'
        for name, bandwidth in REPRESENTATIONS
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"'
        f' mediaPresentationDuration="PT{segments}S" minBufferTime="PT1S"'
        ' profiles="urn:mpeg:dash:profile:isoff-live:2011">\n'
        '<Period id="0"><AdaptationSet mimeType="video/mp4" segmentAlignment="true">'
        '<SegmentTemplate timescale="1000" duration="1000" startNumber="0"'
        ' initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/seg$Number$.m4s"/>'
        f"{reps}</AdaptationSet></Period></MPD>\n"
    ).encode()


def files(film: bytes) -> dict[str, Raw]:
    """Path → response of the DASH page, its MPD, and each representation's init section and
    segments."""
    init, segments = hlssite.split(film)
    out = {
        "/play.html": Raw(PAGE, [b"Content-Type: text/html; charset=utf-8"]),
        "/dash/film.mpd": Raw(mpd(init, len(segments)), [MPD_TYPE]),
    }
    for name, _ in REPRESENTATIONS:
        out[f"/dash/{name}/init.mp4"] = Raw(init, [hlssite.MP4])
        for n, segment in enumerate(segments):
            out[f"/dash/{name}/seg{n}.m4s"] = Raw(segment, [hlssite.MP4])
    return out


def crawl_streams(
    out: Path, film: bytes, job_id: int = 34, harvest_id: int = 6
) -> tuple[CrawlResult, RawSite, dict[str, Raw]]:
    """The HLS page (``/watch.html``) and the DASH page (``/play.html``) crawled in one job with
    every HTML page rendered (the site stopped afterwards); the result, the site and its files."""
    routes = {**hlssite.files(film), **files(film)}

    def route(host: str, path: str) -> Raw | None:
        return routes.get(path) if host == HOST else None

    with serve(route, negotiate=compressed) as site:
        job = {
            "job_id": job_id,
            "harvest_id": harvest_id,
            "seeds": [site.url(HOST, "/watch.html"), site.url(HOST, "/play.html")],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 3,  # page → master → rendition playlist → segment
                "render": "html",
                "render_tabs": 1,
                "render_min_wait_s": 1.5,
                "render_page_timeout_s": 25,
            },
            "resolve": {HOST: "127.0.0.1"},
        }
        return run_crawl(job, out, timeout=180), site, routes
