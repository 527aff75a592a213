"""A page playing an HLS stream of real video (for the crawl and the replay of adaptive
streams): ``/watch.html``'s ``<video>`` has the master playlist as its source, which names a
low and a high rendition, each an fMP4 init section and three segments of a 3-second H.264
film that headless Chromium's MediaRecorder made (no encoder on the test machines). Chromium
plays HLS itself, so the page needs no player script. Served with ``scriptsite.compressed``
(playlists are text: compressed as production servers do).
"""

from __future__ import annotations

import struct

from tests.support.postmediasite import recorded_film
from tests.support.rawsite import Raw

HOST = "stream.site.test"
RENDITIONS = ("low", "high")
PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Watch</title>
<link rel="icon" href="data:,"></head>
<body><h1>Watch</h1>
<video id="film" src="/hls/master.m3u8" muted playsinline width="64" height="48"></video>
</body></html>
"""
MASTER = b"""#EXTM3U
#EXT-X-STREAM-INF:BANDWIDTH=150000,RESOLUTION=64x48,CODECS="avc1.42c00a"
low/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=600000,RESOLUTION=64x48,CODECS="avc1.42c00a"
high/index.m3u8
"""
HLS = b"Content-Type: application/vnd.apple.mpegurl"
MP4 = b"Content-Type: video/mp4"


def mp4_film() -> bytes:
    """3.2 s of fragmented MP4 (one fragment a second) made by headless Chromium."""
    film = recorded_film("video/mp4;codecs=avc1", 3200, slice_ms=1000)
    assert film[4:8] == b"ftyp" and b"moof" in film, "no fragmented MP4"
    return film


def split(film: bytes) -> tuple[bytes, list[bytes]]:
    """A fragmented MP4 as HLS wants it: the init section (``ftyp`` + ``moov``) and one
    segment per fragment (``moof`` + ``mdat``)."""
    init, segments, pos = b"", [], 0
    while pos < len(film):
        size, kind = struct.unpack(">I4s", film[pos : pos + 8])
        box = film[pos : pos + size]
        if kind in (b"ftyp", b"moov"):
            init += box
        elif kind == b"moof":
            segments.append(box)
        elif kind == b"mdat" and segments:
            segments[-1] += box
        pos += size
    assert init and len(segments) >= 2, "a film of one fragment is no stream"
    return init, segments


def files(film: bytes) -> dict[str, Raw]:
    """Path → response of the page, the playlists, the init sections and every segment."""
    init, segments = split(film)
    playlist = b"#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n"
    playlist += b'#EXT-X-MAP:URI="init.mp4"\n'
    playlist += b"".join(b"#EXTINF:1.0,\nseg%d.m4s\n" % n for n in range(len(segments)))
    playlist += b"#EXT-X-ENDLIST\n"
    out = {
        "/watch.html": Raw(PAGE, [b"Content-Type: text/html; charset=utf-8"]),
        "/hls/master.m3u8": Raw(MASTER, [HLS]),
        "/robots.txt": Raw(b"User-agent: *\nDisallow:\n", [b"Content-Type: text/plain"]),
    }
    for name in RENDITIONS:
        out[f"/hls/{name}/index.m3u8"] = Raw(playlist, [HLS])
        out[f"/hls/{name}/init.mp4"] = Raw(init, [MP4])
        for n, segment in enumerate(segments):
            out[f"/hls/{name}/seg{n}.m4s"] = Raw(segment, [MP4])
    return out
