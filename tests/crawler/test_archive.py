"""A rendering browser is served what the job has already captured from the job's WARC, never
a second fetch (the site is asked once per URL), and in a partitioned job what it asks of a host
another partition owns is captured once, by that partition, and read back from its WARC."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from PIL import Image

from tests.support import scriptsite
from tests.support.crawl import FAST_TEMPLATE, REPO, CrawlResult, run_crawl
from tests.support.rawsite import Raw, Routes, serve
from tests.support.renderjobs import warc_records

HTML = b"Content-Type: text/html"
COLOUR = (12, 34, 56)
PAGE = (
    b'<html><head><link rel="icon" href="data:,"><link rel="stylesheet" href="/s.css">'
    b'</head><body style="margin:0"><p>page</p></body></html>'
)


def _rendered(min_wait_s: float, **extra: object) -> dict[str, object]:
    """The template of these tests: the seeds rendered, one hop, no robots, no script links."""
    return {
        **FAST_TEMPLATE,
        "max_hops": 1,
        "render": "seeds",
        "render_min_wait_s": min_wait_s,
        "extract_js": False,
        "obey_robots": False,
        **extra,
    }


def _top_left(result: CrawlResult, page: str) -> tuple[int, ...]:
    """The top-left pixel of a rendered page's viewport screenshot (its WARC record)."""
    (png,) = [
        body
        for kind, h, body in warc_records(result)
        if kind == "resource" and h["WARC-Target-URI"] == f"urn:screenshot:{page}"
    ]
    pixel = Image.open(io.BytesIO(png)).convert("RGB").getpixel((0, 0))
    assert isinstance(pixel, tuple)
    return pixel


def test_a_captured_stylesheet_is_served_to_the_next_page_from_the_warc(tmp_path: Path) -> None:
    """Two rendered seeds share a stylesheet: the first page's browser captures it (through the
    crawl), the second page's gets that capture back from the WARC — the server is asked once
    for every URL, and the second page is still painted with the stylesheet's colour."""
    css = b"body { background: rgb(%d, %d, %d); }" % COLOUR
    routes: Routes = {
        (None, "/"): Raw(PAGE, [HTML]),
        (None, "/two.html"): Raw(PAGE, [HTML]),
        (None, "/s.css"): Raw(css, [b"Content-Type: text/css"]),
    }
    with serve(routes) as site:
        seeds = [site.url("shared.test", "/"), site.url("shared.test", "/two.html")]
        job = {
            "job_id": 5,
            "seeds": seeds,
            "template": _rendered(0.5, render_tabs=1),
            "resolve": {"shared.test": "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "shared", timeout=150)
        asked = Counter(path for _, path in site.requests)
    assert all("rendered" in result.line_for(s)[11] for s in seeds)
    assert asked == Counter({"/": 1, "/two.html": 1, "/s.css": 1}), asked
    css_url = site.url("shared.test", "/s.css")
    assert [f[3] for f in result.log_fields()].count(css_url) == 1
    responses = [h for kind, h, _ in warc_records(result) if kind == "response"]
    assert [h["WARC-Target-URI"] for h in responses].count(css_url) == 1
    for page in seeds:  # both pages were painted with the stylesheet
        assert _top_left(result, page) == COLOUR, page


def test_a_url_the_plain_crawler_is_fetching_is_waited_for_then_served(tmp_path: Path) -> None:
    """The stylesheet is a seed whose (slow) plain fetch has begun when the page's script asks
    for it: the browser waits for that capture and is served it from the WARC — one request."""
    import time

    css = b"body { background: rgb(%d, %d, %d); }" % COLOUR
    late = (
        b'<html><head><link rel="icon" href="data:,"></head><body style="margin:0"><script>'
        b"setTimeout(function () { var l = document.createElement('link'); l.rel = 'stylesheet';"
        b" l.href = ['', 'slow'].join('/') + String.fromCharCode(46) + 'css';"
        b" document.head.appendChild(l); }, 500);</script></body></html>"
    )

    def route(host: str, path: str) -> Raw | None:
        if path == "/slow.css":
            time.sleep(3)  # still being fetched when the page asks for it
            return Raw(css, [b"Content-Type: text/css"])
        return Raw(late, [HTML]) if path == "/" else None

    with serve(route) as site:
        seeds = [site.url("slow.test", "/slow.css"), site.url("slow.test", "/")]
        job = {
            "job_id": 6,
            "seeds": seeds,
            "template": _rendered(1.0),
            "resolve": {"slow.test": "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "slow", timeout=150)
        asked = Counter(path for _, path in site.requests)
    assert asked["/slow.css"] == 1, asked
    line = result.line_for(seeds[0])
    assert (line[1], line[4]) == ("200", "-") and "browser" not in line[11], line
    assert "rendered" in result.line_for(seeds[1])[11]
    assert _top_left(result, seeds[1]) == COLOUR
    # Scrapy's closing stats in crawler.log: served from the WARC, nothing re-fetched
    stats = (result.out / "logs" / "crawler.log").read_text()
    assert "'harvestflow/render/from_archive': 1," in stats
    assert "harvestflow/render/refetched" not in stats


# --- a partitioned job ---------------------------------------------------------------------------
A_PAGE = (
    b'<html><head><link rel="icon" href="data:,"></head><body style="margin:0">'
    b"<script>var i = new Image(); i.width = 300; i.height = 300;"
    b" i.src = 'http:/' + '/' + ['b', 'test'].join(String.fromCharCode(46)) + ':' + location.port"
    b" + ['', 'pic'].join('/') + String.fromCharCode(46) + 'png';"
    b" document.body.insertBefore(i, document.body.firstChild);</script></body></html>"
)
PIC = (200, 20, 40)


def test_a_partitioned_job_archives_a_cross_partition_resource_once(tmp_path: Path) -> None:
    """Host ``a.test``'s rendered page loads an image from ``b.test``, which the other
    partition owns: captured once in the job's WARCs (by its owner, ``browser``, via the page),
    asked of the server once, and the page's screenshot shows it."""
    pic = scriptsite.png(300, 300, PIC)
    routes: Routes = {
        ("a.test", "/"): Raw(A_PAGE, [HTML]),
        ("b.test", "/"): Raw(b"<html><body>b</body></html>", [HTML]),
        ("b.test", "/pic.png"): Raw(pic, [b"Content-Type: image/png"]),
    }
    out = tmp_path / "parts"
    with serve(routes) as site:
        seeds = [site.url("a.test", "/"), site.url("b.test", "/")]
        job = {
            "job_id": 7,
            "harvest_id": 3,
            "seeds": seeds,
            # the two seeds' hosts are dealt to the two partitions (a.test to p0, b.test to p1)
            "template": _rendered(0.5),
            "resolve": {"a.test": "127.0.0.1", "b.test": "127.0.0.1"},
            "warc_prefix": "7-3",
        }
        job_path = tmp_path / "parts-job.json"
        job_path.write_text(json.dumps(job))
        cmd = [sys.executable, "-m", "crawler", "--job", str(job_path), "--out", str(out),
               "--processes", "2", "--progress-interval", "0.5"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=150, cwd=REPO)
        assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
        asked = Counter(site.requests)
    result = CrawlResult(out, json.loads((out / "summary.json").read_text()), proc)
    image = site.url("b.test", "/pic.png")
    assert asked[("b.test", "/pic.png")] == 1, asked
    records = [
        (kind, h)
        for kind, h, _ in warc_records(result)
        if kind in ("response", "revisit") and h["WARC-Target-URI"] == image
    ]
    assert len(records) == 1, records
    assert any("-p1" in w.name for w in result.data_warcs())
    line = result.line_for(image)
    assert (line[1], line[4], line[5]) == ("200", "E", seeds[0]), line
    assert "browser" in line[11].split(","), line
    assert _top_left(result, seeds[0]) == PIC


# --- reading a capture back ---------------------------------------------------------------------
def test_a_revisit_is_served_from_its_original_decoded(tmp_path: Path) -> None:
    """A capture written as a revisit (identical payload) is served with the original's body
    from the earlier job's WARC the dedup index names (content coding removed, as a proxy that
    sends whole bodies must), under the revisit's own status and headers; without a readable
    original there is nothing to serve (the renderer then says so and re-fetches)."""
    import datetime as dt
    import gzip

    from crawler.dedup_lookup import EarlierCapture
    from crawler.rendering.archive import ArchivedCaptures
    from crawler.warc import records
    from crawler.warc.files import RotatingWarcWriter
    from harvestflow.formats.cdx import CdxEntry, cdx11_line
    from harvestflow.formats.urls import canonical_key

    url = "http://Shared.test/s.css"
    body = b"body { background: rgb(12, 34, 56); }\n" * 40
    sent = gzip.compress(body)
    digest = records.sha1_digest(sent)
    when = records.warc_date(dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
    head = [("Content-Type", "text/css"), ("Content-Encoding", "gzip")]

    earlier = RotatingWarcWriter(tmp_path / "earlier", "1-3", 1 << 30, {"software": "test"})
    original_id = records.new_record_id()
    http = records.response_http_headers(200, "HTTP/1.1", head)
    ((name, offset, _),) = earlier.write(
        records.response_record(url, http, sent, when, original_id, None, None)
    )
    earlier.close()

    job = RotatingWarcWriter(tmp_path / "job", "2-3", 1 << 30, {"software": "test"})
    now = records.warc_date(dt.datetime(2026, 2, 2, tzinfo=dt.UTC))
    http2 = records.response_http_headers(200, "HTTP/1.1", [*head, ("X-Run", "2")])
    revisit = records.revisit_record(
        url.lower(), http2, digest, now, records.new_record_id(), None,
        records.PROFILE_IDENTICAL, url, when, original_id,
    )  # fmt: skip
    ((job_name, job_offset, length),) = job.write(revisit)
    cdx = tmp_path / "cdx.unsorted"
    entry = CdxEntry(url.lower(), now, "warc/revisit", "200", digest, length, job_offset)
    cdx.write_text(cdx11_line(entry, job_name) + "\n")  # the job's WARC is still .open

    key = canonical_key(url)
    where = str(tmp_path / "earlier" / name)
    dedup = {key: EarlierCapture(url, digest, when, where, offset, original_id, None, None)}
    served = ArchivedCaptures([(cdx, tmp_path / "job")], dedup).response(key)
    assert served is not None
    assert (served.status, served.body) == (200, body)
    assert ("X-Run", "2") in served.headers
    assert ArchivedCaptures([(cdx, tmp_path / "job")], {}).response(key) is None


def test_a_post_to_a_captured_url_is_captured_not_answered_from_the_get(tmp_path: Path) -> None:
    """The page's script GETs /api, then POSTs to it: the POST is its own capture (request and
    response records, a crawl.log line), and the server sees each request once."""
    page = (
        b'<html><head><link rel="icon" href="data:,"></head><body><p id="out">page</p><script>'
        b"fetch('/api').then(r => r.text()).then(() => fetch('/api', {method: 'POST',"
        b" body: 'q=1', headers: {'Content-Type': 'application/x-www-form-urlencoded'}}))"
        b".then(r => r.text()).then(t => { document.getElementById('out').textContent = t; });"
        b"</script></body></html>"
    )
    routes: Routes = {
        (None, "/"): Raw(page, [HTML]),
        (None, "/api"): Raw(b'{"answer": 42}', [b"Content-Type: application/json"]),
    }
    with serve(routes) as site:
        seed = site.url("posts.test", "/")
        job = {
            "job_id": 7,
            "seeds": [seed],
            "template": _rendered(1.0, render_tabs=1),
            "resolve": {"posts.test": "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "posts", timeout=150)
        asked = Counter(path for _, path in site.requests)
    assert "rendered" in result.line_for(seed)[11]
    assert asked == Counter({"/": 1, "/api": 1, "POST /api": 1}), asked
    api = site.url("posts.test", "/api")
    records = warc_records(result)
    requests = [
        body for kind, h, body in records if kind == "request" and h["WARC-Target-URI"] == api
    ]
    assert sorted(requests) == [b"", b"q=1"], requests  # the GET's, and the POST with its body
    responses = [h for kind, h, _ in records if kind == "response" and h["WARC-Target-URI"] == api]
    assert len(responses) == 2
