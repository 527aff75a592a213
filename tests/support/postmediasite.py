"""A loopback news site of today's habits, served as nginx serves it: stories from a POST JSON
API, an audio clip and a video that the browser fetches by byte range.

The home page is a shell; its script (gzip-compressed, as every text type of the site) asks
the story API ``POST /api/stories`` with the JSON bodies ``{"page": 1}`` then ``{"page": 2}``
(the same URL, a different answer for each body) and, both at once, the form-encoded
``POST /api/count`` for two sections, and builds the story list and the counts from the
answers. The page embeds ``<audio>`` (a WAV clip)
and ``<video>`` (a WebM film); the media files are served like nginx serves static files:
``Accept-Ranges: bytes``, a ``Range`` request answered 206 with ``Content-Range``, never
compressed. A GET of an API URL is refused (405), as a POST-only API does. Every request is
recorded (method, path, Range header, body).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import math
import re
import struct
import threading
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

from tests.support.crawl import FAST_TEMPLATE, CrawlResult, run_crawl

HOST = "news.posted.test"
PAGE_SIZE = 3
STORIES = {n: f"Posted story {n}" for n in range(1, 2 * PAGE_SIZE + 1)}
# the form-encoded count API, asked for both sections at once (two POSTs to one URL in flight)
COUNTS = {"news": "6 stories in news", "sport": "2 stories in sport"}

SHELL = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Posted news</title>
<script src="/app.js" defer></script>
</head><body>
<h1>Posted news</h1>
<p id="count-news">counting</p>
<p id="count-sport">counting</p>
<ul id="stories"></ul>
<audio id="clip" controls preload="auto" src="/media/clip.wav"></audio>
<video id="film" controls preload="auto" width="64" height="48" src="/media/film.webm"></video>
</body></html>
"""

# the API paths are joined from pieces: no string of the script is a URL a link extractor takes
APP_JS = b"""(function () {
  var list = document.getElementById('stories');
  function api(name, body, type) {
    return fetch('/' + 'api/' + name, {method: 'POST', headers: {'Content-Type': type},
                                       body: body}).then(function (r) { return r.json(); });
  }
  function load(page) {
    return api('stories', JSON.stringify({page: page}), 'application/json').then(function (d) {
      d.stories.forEach(function (s) {
        var li = document.createElement('li');
        li.className = 'story';
        var a = document.createElement('a');
        a.href = '/' + 'story/' + s.id + '.html';
        a.textContent = s.title;
        li.appendChild(a);
        list.appendChild(li);
      });
      return d.more;
    });
  }
  load(1).then(function (more) { if (more) { return load(2); } }).then(function () {
    // a GET of the API URL after its POSTs: the server's own answer, never a POST's
    return fetch('/' + 'api/stories').then(function (r) {
      var a = document.createElement('a');
      a.href = '/' + 'status/' + r.status + '.html';
      a.textContent = 'GET status';
      document.body.appendChild(a);
    });
  });
  ['news', 'sport'].forEach(function (section) {
    api('count', 'section=' + section + '&sort=new+first', 'application/x-www-form-urlencoded')
      .then(function (d) { document.getElementById('count-' + section).textContent = d.count; });
  });
})();
"""


# a page of adaptive streams: an HLS master playlist (three variants and an audio rendition)
# and a DASH MPD (three video representations by SegmentTemplate/$Number$, audio by
# SegmentTimeline/$Time$); served with their registered types
STREAMS_PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Streams</title></head>
<body><h1>Streams</h1>
<video id="hls" src="/hls/master.m3u8" width="64" height="48"></video>
<video id="dash" width="64" height="48">
<source src="/dash/film.mpd" type="application/dash+xml"></video>
</body></html>
"""
HLS_MASTER = b"""#EXTM3U
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",DEFAULT=YES,URI="audio/index.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360,AUDIO="aud"
mid/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=200000,RESOLUTION=320x180,AUDIO="aud"
low/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=2500000,RESOLUTION=1280x720,AUDIO="aud"
high/index.m3u8
"""
HLS_MEDIA = b"""#EXTM3U
#EXT-X-VERSION:7
#EXT-X-TARGETDURATION:2
#EXT-X-MAP:URI="init.mp4"
#EXTINF:2.0,
seg0.m4s
#EXTINF:2.0,
seg1.m4s
#EXTINF:1.0,
seg2.m4s
#EXT-X-ENDLIST
"""
DASH_MPD = b"""<?xml version="1.0" encoding="UTF-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT5S"
     profiles="urn:mpeg:dash:profile:isoff-live:2011" minBufferTime="PT2S">
 <Period id="1">
  <AdaptationSet mimeType="video/mp4" contentType="video">
   <SegmentTemplate media="$RepresentationID$/seg-$Number%03d$.m4s"
                    initialization="$RepresentationID$/init.mp4"
                    duration="2" timescale="1" startNumber="1"/>
   <Representation id="v2" bandwidth="500000" width="640" height="360"/>
   <Representation id="v1" bandwidth="100000" width="320" height="180"/>
   <Representation id="v3" bandwidth="1500000" width="1280" height="720"/>
  </AdaptationSet>
  <AdaptationSet mimeType="audio/mp4" contentType="audio">
   <Representation id="a1" bandwidth="64000">
    <SegmentTemplate media="audio/$Time$.m4s" initialization="audio/init.mp4" timescale="48000">
     <SegmentTimeline><S t="0" d="96000" r="1"/><S d="48000"/></SegmentTimeline>
    </SegmentTemplate>
   </Representation>
  </AdaptationSet>
 </Period>
</MPD>
"""
HLS_TYPE, DASH_TYPE = "application/vnd.apple.mpegurl", "application/dash+xml"


def stream_files() -> dict[str, tuple[bytes, str]]:
    """Path → (body, type) of the streams page's manifests and every segment they name."""
    files = {
        "/streams.html": (STREAMS_PAGE, "text/html; charset=utf-8"),
        "/hls/master.m3u8": (HLS_MASTER, HLS_TYPE),
        "/dash/film.mpd": (DASH_MPD, DASH_TYPE),
    }
    for name in ("low", "mid", "high", "audio"):
        files[f"/hls/{name}/index.m3u8"] = (HLS_MEDIA, HLS_TYPE)
        for part in ("init.mp4", "seg0.m4s", "seg1.m4s", "seg2.m4s"):
            files[f"/hls/{name}/{part}"] = (f"hls {name} {part}".encode(), "video/mp4")
    for rep in ("v1", "v2", "v3"):
        for part in ("init.mp4", "seg-001.m4s", "seg-002.m4s", "seg-003.m4s"):
            files[f"/dash/{rep}/{part}"] = (f"dash {rep} {part}".encode(), "video/mp4")
    for part in ("init.mp4", "0.m4s", "96000.m4s", "192000.m4s"):
        files[f"/dash/audio/{part}"] = (f"dash audio {part}".encode(), "audio/mp4")
    return files


def wav_clip(seconds: float = 1.0, rate: int = 8000) -> bytes:
    """A real WAV file: a 440 Hz tone, 16-bit mono (Chromium decodes it; duration ``seconds``)."""
    frames = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * 440 * i / rate)))
        for i in range(int(seconds * rate))
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return out.getvalue()


# run in headless Chromium: a changing 64x48 canvas recorded by MediaRecorder as ``mime`` for
# ``ms`` milliseconds (``slice_ms``: one chunk/fragment that often, 0 = one), the file as base64
RECORD_CANVAS_JS = """
const [mime, ms, sliceMs, done] = arguments;
const c = document.createElement('canvas'); c.width = 64; c.height = 48;
document.body.appendChild(c);
const g = c.getContext('2d');
const rec = new MediaRecorder(c.captureStream(15), {mimeType: mime});
const parts = [];
rec.ondataavailable = e => parts.push(e.data);
rec.onstop = async () => {
  const b = new Uint8Array(await new Blob(parts).arrayBuffer());
  let s = '';
  for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i]);
  done(btoa(s));
};
let n = 0;
const t = setInterval(() => { g.fillStyle = `rgb(${n * 20 % 255},80,160)`; g.fillRect(0, 0, 64, 48); n++; }, 50);
if (sliceMs) rec.start(sliceMs); else rec.start();
setTimeout(() => { clearInterval(t); rec.stop(); }, ms);
"""


def recorded_film(mime: str, ms: int, slice_ms: int = 0) -> bytes:
    """A real video made by headless Chromium's MediaRecorder (no encoder on the test machines;
    Chromium is there for the rendering anyway)."""
    from tests.support.browser import chromium

    with chromium() as driver:
        driver.set_script_timeout(60)
        driver.get("data:text/html,<body></body>")
        return base64.b64decode(driver.execute_async_script(RECORD_CANVAS_JS, mime, ms, slice_ms))


def webm_film() -> bytes:
    """1.5 s of VP8 WebM (Chromium's MediaRecorder writes its Duration and Cues)."""
    film = recorded_film("video/webm;codecs=vp8", 1500)
    assert film[:4] == b"\x1a\x45\xdf\xa3" and b"\x44\x89" in film, "no WebM with a duration"
    return film


@dataclass
class Seen:
    method: str
    path: str
    range: str | None
    body: bytes


@dataclass
class PostMediaSite:
    port: int
    media: dict[str, tuple[bytes, str]]
    requests: list[Seen] = field(default_factory=list)

    def url(self, path: str = "/") -> str:
        return f"http://{HOST}:{self.port}{path}"


def _stories(page: int) -> bytes:
    ids = [n for n in STORIES if (n - 1) // PAGE_SIZE + 1 == page]
    return json.dumps(
        {"stories": [{"id": n, "title": STORIES[n]} for n in ids], "more": page < 2}
    ).encode()


def story_page(n: int) -> bytes:
    return f"<!doctype html><title>{STORIES[n]}</title><h1>{STORIES[n]}</h1>".encode()


_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
STREAM_FILES = stream_files()


@contextmanager
def serve(film: bytes) -> Iterator[PostMediaSite]:
    """The site on 127.0.0.1 (a free port) for the ``with`` block."""
    media = {"/media/clip.wav": (wav_clip(), "audio/wav"), "/media/film.webm": (film, "video/webm")}
    site = PostMediaSite(0, media)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"
        timeout = 10

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, ctype: str, body: bytes, extra: list[tuple[str, str]]) -> None:
            accepts = "gzip" in (self.headers.get("Accept-Encoding") or "")
            text = ctype.startswith(("text/", "application/javascript", "application/json"))
            if text:
                extra = [*extra, ("Vary", "Accept-Encoding")]
                if accepts:  # nginx's gzip_types: every text type compressed
                    body = gzip.compress(body)
                    extra.append(("Content-Encoding", "gzip"))
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            for name, value in extra:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _seen(self, body: bytes = b"") -> None:
            site.requests.append(Seen(self.command, self.path, self.headers.get("Range"), body))

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._seen(body)
            if self.path == "/api/stories":
                try:
                    page = int(json.loads(body)["page"])
                except (ValueError, KeyError, TypeError):
                    self._send(400, "application/json", b'{"error": "bad body"}', [])
                    return
                self._send(200, "application/json", _stories(page), [])
            elif self.path == "/api/count":
                section = parse_qs(body.decode("utf-8", "replace")).get("section", [""])[0]
                if section not in COUNTS:
                    self._send(400, "application/json", b'{"error": "no such section"}', [])
                    return
                answer = json.dumps({"count": COUNTS[section]}).encode()
                self._send(200, "application/json", answer, [])
            else:
                self._send(405, "text/plain", b"no", [("Allow", "GET")])

        def do_GET(self) -> None:
            self._seen()
            path = self.path
            if path == "/":
                self._send(200, "text/html; charset=utf-8", SHELL, [])
            elif path == "/app.js":
                self._send(200, "application/javascript", APP_JS, [])
            elif path.startswith("/api/"):
                self._send(405, "text/plain", b"POST only", [("Allow", "POST")])
            elif m := re.fullmatch(r"/story/(\d+)\.html", path):
                n = int(m.group(1))
                if n in STORIES:
                    self._send(200, "text/html; charset=utf-8", story_page(n), [])
                else:
                    self._send(404, "text/plain", b"none", [])
            elif path in site.media:
                self._media(*site.media[path])
            elif path in STREAM_FILES:
                body, ctype = STREAM_FILES[path]
                self._send(200, ctype, body, [])
            else:
                self._send(404, "text/plain", b"none", [])

        def _media(self, data: bytes, ctype: str) -> None:
            """As nginx serves a static file: ranges honoured (206), never compressed."""
            size = len(data)
            asked = _RANGE.match(self.headers.get("Range") or "")
            if asked is None or not any(asked.groups()):
                self._send(200, ctype, data, [("Accept-Ranges", "bytes")])
                return
            first_s, last_s = asked.groups()
            if first_s:
                first, last = int(first_s), min(int(last_s or size - 1), size - 1)
            else:
                first, last = max(size - int(last_s), 0), size - 1
            if first >= size:
                self._send(416, "text/plain", b"", [("Content-Range", f"bytes */{size}")])
                return
            part = [("Accept-Ranges", "bytes"), ("Content-Range", f"bytes {first}-{last}/{size}")]
            self._send(206, ctype, data[first : last + 1], part)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="postmediasite", daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def crawl(
    out: Path,
    film: bytes,
    job_id: int = 21,
    harvest_id: int = 5,
    seed: str = "/",
    **template: object,
) -> tuple[CrawlResult, PostMediaSite]:
    """Crawl the site from ``seed`` with rendering on every HTML page (the site stopped
    afterwards; ``template``: more template settings)."""
    with serve(film) as site:
        job = {
            "job_id": job_id,
            "harvest_id": harvest_id,
            "seeds": [site.url(seed)],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 2,
                "render": "html",
                "render_min_wait_s": 1.5,
                "render_page_timeout_s": 20,
                **template,
            },
            "resolve": {HOST: "127.0.0.1"},
        }
        return run_crawl(job, out, timeout=150), site
