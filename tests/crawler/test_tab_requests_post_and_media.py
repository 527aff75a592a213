"""A rendered page's POST API calls and its ranged media, crawled with ``--render html`` from a
site served as nginx serves one (tests/crawler/postmediasite.py: gzip on every text type,
byte ranges on media):

- each POST is archived as a request record carrying its body (with its Content-Length) and a
  response record naming that request (``WARC-Concurrent-To``), so indexers pair them; the
  bodies posted to the same API URL, one after the other or both at once, are each a capture
  of its own, never a revisit of each other nor an unrecorded fetch;
- the crawler's own CDX keys each POST capture under its body exactly as ``cdxj-indexer -p``
  (the reference) keys the same WARC record; the indexing chain's lines of the job's WARCs are
  the reference's ``-p`` lines, CDXJ and CDX11;
- the audio clip and the video, which the browser asks for by ``Range``, are each archived
  once as a 200 record of the whole file (fetched without the range), not as partial 206s.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.rendering.cdp import find_chromium
from indexing.cdx import index_warc
from tests.support import postmediasite
from tests.support.crawl import CrawlResult
from tests.support.environment import oracle

Crawled = tuple[CrawlResult, postmediasite.PostMediaSite]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Crawled:
    find_chromium()
    film = postmediasite.webm_film()
    return postmediasite.crawl(tmp_path_factory.mktemp("postmedia") / "job", film)


def _records(result: CrawlResult) -> list:
    """(WARC headers, HTTP status line or request line, HTTP headers, body) of every request,
    response and revisit record, in file order."""
    out = []
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type not in ("request", "response", "revisit"):
                    continue
                http = rec.http_headers
                out.append(
                    (
                        rec.rec_type,
                        dict(rec.rec_headers.headers),
                        http.protocol if rec.rec_type == "request" else http.get_statuscode(),
                        http,
                        rec.content_stream().read(),
                    )
                )
    return out


def test_post_api_calls_are_archived_as_request_records_with_their_bodies(crawled: Crawled):
    result, site = crawled
    api, count = site.url("/api/stories"), site.url("/api/count")
    records = _records(result)
    posts = [r for r in records if r[0] == "request" and r[2] == "POST"]
    bodies = sorted((r[1]["WARC-Target-URI"], r[4]) for r in posts)
    assert bodies == sorted(
        [
            (api, b'{"page":1}'),
            (api, b'{"page":2}'),
            (count, b"section=news&sort=new+first"),
            (count, b"section=sport&sort=new+first"),  # in flight with the one above
        ]
    ), bodies
    by_id = {r[1]["WARC-Record-ID"]: r for r in records}
    for _, headers, _, http, body in posts:
        assert http.get_header("Content-Length") == str(len(body))
        # the answer: a full response record (never a revisit), naming its request
        response = by_id[headers["WARC-Concurrent-To"]]
        assert response[0] == "response" and response[2] == "200"
        assert response[1]["WARC-Concurrent-To"] == headers["WARC-Record-ID"]
    answers = [
        json.loads(r[4])
        for r in records
        if r[0] == "response" and r[1]["WARC-Target-URI"] == api and r[2] == "200"
    ]
    assert sorted(s["id"] for a in answers for s in a["stories"]) == list(postmediasite.STORIES)
    # the stories were found in the DOM the script built from the POST answers
    pages = {f[3]: f[1] for f in result.log_fields()}
    for n in postmediasite.STORIES:
        assert pages.get(site.url(f"/story/{n}.html")) == "200", n
    # the page's GET of the API URL got the server's 405, not a POST answer from the WARC
    assert site.url("/status/405.html") in pages and site.url("/status/200.html") not in pages


def test_media_asked_for_by_range_is_archived_once_whole(crawled: Crawled):
    result, site = crawled
    records = _records(result)
    for path, (data, ctype) in site.media.items():
        url = site.url(path)
        captures = [r for r in records if r[0] != "request" and r[1]["WARC-Target-URI"] == url]
        assert [(r[0], r[2]) for r in captures] == [("response", "200")], (path, captures[:1])
        _, headers, _, http, body = captures[0]
        assert body == data and http.get_header("Content-Type") == ctype
        assert "WARC-Truncated" not in headers
        # the crawl asked for it once, whole: the browser's range stayed with the proxy
        asked = [s for s in site.requests if s.path == path]
        assert [(s.method, s.range) for s in asked] == [("GET", None)], asked


def _oracle_lines(warcs: list[Path], *args: str) -> list[str]:
    proc = subprocess.run(
        [str(oracle("cdxj-indexer")), "-p", *args, *map(str, warcs)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [line for line in proc.stdout.splitlines() if not line.startswith(" CDX")]


def _crawler_cdx(result: CrawlResult) -> list[str]:
    """The CDX11 lines the crawler recorded as it wrote (its metadata WARC's CDX)."""
    for warc in (result.out / "warcs").glob("*-metadata-*.warc.gz"):
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
                if "/crawl/index/cdx" in uri:
                    text = rec.content_stream().read().decode()
                    return [ln for ln in text.splitlines() if ln and not ln.startswith(" CDX")]
    raise AssertionError("no CDX in the metadata WARC")


def test_post_captures_are_keyed_under_their_body_as_cdxj_indexer_keys_them(crawled: Crawled):
    result, _ = crawled
    warcs = result.data_warcs()
    reference = _oracle_lines(warcs, "-11")
    posted = [ln for ln in reference if "__wb_method=post" in ln.split(" ", 1)[0]]
    assert len(posted) == 4, reference  # the reference paired each POST with its answer
    assert any("/api/stories?__wb_method=post&page=2 " in ln for ln in posted), posted
    ours = _crawler_cdx(result)
    assert sorted(posted) == sorted(ln for ln in ours if "__wb_method=" in ln)
    assert sorted(ours) == sorted(reference)
    # the indexing chain's lines of the same WARCs: the reference's, both formats
    for fmt, args in (("cdxj", ()), ("cdx11", ("-11",))):
        lines = []
        for warc in warcs:
            lines += [ln for ln in index_warc(warc).lines(fmt) if not ln.startswith(" CDX")]
        assert lines == _oracle_lines(warcs, *args), fmt
