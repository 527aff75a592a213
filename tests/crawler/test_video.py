"""yt-dlp on rendered pages (crawler/rendering/video.py, template ``render_video``): on a loopback
"video platform" page whose film only its ``og:video`` names (no link, no element: neither the
plain crawl nor the browser fetches it), yt-dlp's generic extractor (``render_video = "all"``)
finds the film and downloads it through the tab's recording proxy, so the film is archived as
a response record of the page (crawl.log via the page) and what yt-dlp found is a
``youtube-dl:URL`` metadata record tied to the page's response; without the setting neither
is there. ``platforms`` runs it only on pages one of yt-dlp's site extractors claims (no
network: the claim is by URL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.jobspec import JobSpecError, from_dict
from crawler.rendering.cdp import find_chromium
from crawler.rendering.video import VIDEO_INFO_TYPE, wants_video
from tests.support.crawl import FAST_TEMPLATE, CrawlResult, run_crawl
from tests.support.rawsite import Raw, serve
from tests.support.scriptsite import compressed

HOST = "films.site.test"
FILM = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(range(256)) * 40


def _crawl(out: Path, video: str) -> tuple[CrawlResult, str, list[tuple[str, dict, bytes]]]:
    find_chromium()
    port: list[int] = []

    def route(host: str, path: str) -> Raw | None:
        if host != HOST:
            return None
        if path == "/watch.html":
            film = f"http://{HOST}:{port[0]}/media/film.mp4"
            page = (
                '<!doctype html><html><head><meta charset="utf-8"><title>A film</title>'
                f'<meta property="og:video" content="{film}">'
                '<meta property="og:title" content="A film"><link rel="icon" href="data:,">'
                "</head><body><h1>A film</h1></body></html>"
            )
            return Raw(page.encode(), [b"Content-Type: text/html; charset=utf-8"])
        if path == "/media/film.mp4":
            return Raw(FILM, [b"Content-Type: video/mp4"])
        if path == "/robots.txt":
            return Raw(b"User-agent: *\nDisallow:\n", [b"Content-Type: text/plain"])
        return None

    with serve(route, negotiate=compressed) as site:
        port.append(site.port)
        seed = site.url(HOST, "/watch.html")
        job = {
            "job_id": 34,
            "seeds": [seed],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 1,
                "render": "html",
                "render_tabs": 1,
                "render_min_wait_s": 0.5,
                "render_page_timeout_s": 20,
                "render_video": video,
                "render_video_timeout_s": 60,
            },
            "resolve": {HOST: "127.0.0.1"},
        }
        result = run_crawl(job, out, timeout=180)
    records = []
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                headers = dict(rec.rec_headers.headers)
                records.append((rec.rec_type, headers, rec.content_stream().read()))
    return result, seed, records


def test_yt_dlp_archives_a_pages_film_through_the_crawl_and_keeps_what_it_found(
    tmp_path: Path,
) -> None:
    result, seed, records = _crawl(tmp_path / "video", "all")
    film_url = seed.replace("/watch.html", "/media/film.mp4")
    films = [b for kind, h, b in records if kind == "response" and h["WARC-Target-URI"] == film_url]
    assert films and films[0].endswith(FILM), "the film is not archived"
    assert len(films) == 1
    line = result.line_for(film_url)
    assert (line[1], line[5]) == ("200", seed), line  # fetched by the crawl for the page
    assert "video:1" in result.line_for(seed)[11].split(","), result.line_for(seed)
    page_id = next(
        h["WARC-Record-ID"]
        for kind, h, _ in records
        if kind == "response" and h["WARC-Target-URI"] == seed
    )
    (info,) = [
        (h, b)
        for kind, h, b in records
        if kind == "metadata" and h["WARC-Target-URI"] == f"youtube-dl:{seed}"
    ]
    assert info[0]["Content-Type"] == VIDEO_INFO_TYPE
    assert info[0]["WARC-Concurrent-To"] == page_id
    found = json.loads(info[1])
    assert (found["url"], found["title"], found["webpage_url"]) == (film_url, "A film", seed)


def test_without_the_setting_yt_dlp_does_not_run_and_the_film_is_not_archived(
    tmp_path: Path,
) -> None:
    result, seed, records = _crawl(tmp_path / "plain", "none")
    uris = {h.get("WARC-Target-URI") for _, h, _ in records}
    assert seed in uris
    assert seed.replace("/watch.html", "/media/film.mp4") not in uris
    assert f"youtube-dl:{seed}" not in uris
    assert not [n for n in result.line_for(seed)[11].split(",") if n.startswith("video:")]


def test_platforms_runs_yt_dlp_only_on_pages_its_site_extractors_claim() -> None:
    assert wants_video("platforms", "https://www.youtube.com/watch?v=dQw4w9WgXcQ")
    assert wants_video("platforms", "https://vimeo.com/76979871")
    assert not wants_video("platforms", "http://films.site.test/watch.html")
    assert wants_video("all", "http://films.site.test/watch.html")
    assert not wants_video("none", "https://www.youtube.com/watch?v=dQw4w9WgXcQ")
    spec = {"job_id": 1, "seeds": ["http://a.test/"], "template": {"render_video": "yes"}}
    with pytest.raises(JobSpecError, match="render_video must be none, platforms or all"):
        from_dict(spec)
