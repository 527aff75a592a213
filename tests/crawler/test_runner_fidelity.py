"""One crawl of the sample site, checked for archival fidelity: the WARCs pass ``warcio check``,
bodies are what the server sent, links in srcset/CSS/style are followed, logs and reports have
Heritrix's formats. (One module-wide crawl keeps the suite fast.)"""

from __future__ import annotations

import base64
import re
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.support.crawl import FETCH_CLIENTS, ORACLE_BIN, REPO, CrawlResult, make_job, run_crawl


@pytest.fixture(scope="module", params=FETCH_CLIENTS)
def crawl(site, tmp_path_factory, request) -> CrawlResult:
    out = tmp_path_factory.mktemp(f"fidelity-{request.param}") / "job"
    job = make_job(
        site,
        [site.url("www.example-a.test", "/"), site.url("www.example-b.test", "/")],
        {"fetch_client": request.param},
        domains=[
            {"domain": "example-a.test", "config_id": 1},
            {"domain": "example-b.test", "config_id": 2},
        ],
    )
    return run_crawl(job, out)


def records(path: Path) -> Iterator:
    with path.open("rb") as fh:
        for rec in ArchiveIterator(fh):
            rec.payload = rec.content_stream().read() if rec.rec_type != "revisit" else b""
            rec.raw_payload = rec.payload
            yield rec


def all_records(crawl: CrawlResult) -> list:
    out = []
    for warc in crawl.data_warcs():
        for rec in records(warc):
            out.append(rec)
    return out


def raw_payload(path: Path, url: str) -> tuple[object, bytes]:
    """The response record of url and its payload as stored (no decoding of any kind)."""
    with path.open("rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type == "response" and rec.rec_headers.get_header("WARC-Target-URI") == url:
                return rec, rec.raw_stream.read()
    raise AssertionError(f"no response record for {url}")


def response_for(crawl: CrawlResult, url: str) -> tuple[object, bytes]:
    for warc in crawl.data_warcs():
        try:
            return raw_payload(warc, url)
        except AssertionError:
            continue
    raise AssertionError(f"no response record for {url}")


def b32(hexdigest: str) -> str:
    return "sha1:" + base64.b32encode(bytes.fromhex(hexdigest)).decode()


def test_every_warc_passes_warcio_check(crawl):
    warcs = sorted((crawl.out / "warcs").glob("*.warc.gz"))
    assert len(warcs) == 2  # one data WARC, one metadata WARC
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "warcio"), "check", *map(str, warcs)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not list((crawl.out / "warcs").glob("*.open"))


def test_warc_1_1_with_one_gzip_member_per_record(crawl):
    for warc in sorted((crawl.out / "warcs").glob("*.warc.gz")):
        data = warc.read_bytes()
        with warc.open("rb") as fh:
            it = ArchiveIterator(fh)
            ends = []
            for rec in it:
                assert rec.rec_headers.protocol == "WARC/1.1"
                it.read_to_end(rec)
                offset, length = it.get_record_offset(), it.get_record_length()
                assert data[offset : offset + 2] == b"\x1f\x8b", (warc.name, offset)
                # the member holds exactly this record: it decompresses alone
                assert zlib.decompress(data[offset : offset + length], 31).startswith(b"WARC/1.1")
                ends.append(offset + length)
        assert ends[-1] == len(data)


def test_warc_names_follow_the_architecture(crawl):
    (data,) = crawl.data_warcs()
    assert re.fullmatch(r"7-2-\d{17}-00000-[A-Za-z0-9.-]+\.warc\.gz", data.name)
    assert (crawl.out / "warcs" / "7-metadata-1.warc.gz").exists()


def test_payload_digests_equal_sha1_of_what_the_server_sent(crawl, site):
    served = {(r.host, r.path): r.sha1 for r in site.requests if r.method == "GET"}
    checked = 0
    for rec in all_records(crawl):
        if rec.rec_type != "response":
            continue
        parts = urlsplit(rec.rec_headers.get_header("WARC-Target-URI"))
        target = parts.path + ("?" + parts.query if parts.query else "")
        expected = served[(parts.hostname, target)]
        assert rec.rec_headers.get_header("WARC-Payload-Digest") == b32(expected), target
        checked += 1
    assert checked >= 40


def test_gzip_body_is_stored_as_sent_and_its_links_followed(crawl, site):
    url = site.url("www.example-a.test", "/gzip.html")
    rec, payload = response_for(crawl, url)
    assert rec.http_headers.get_header("Content-Encoding") == "gzip"
    assert payload[:2] == b"\x1f\x8b"
    served = site.served("www.example-a.test", "/gzip.html")[-1]
    assert served.content_encoding == "gzip"
    # the link only present inside the compressed body was found (after decompression)
    assert crawl.line_for(site.url("www.example-a.test", "/gzip-target.html"))[1] == "200"


def test_chunked_response_is_dechunked_in_payload_and_digest(crawl, site):
    url = site.url("www.example-a.test", "/chunked.html")
    rec, payload = response_for(crawl, url)
    served = site.served("www.example-a.test", "/chunked.html")[-1]
    assert served.chunked
    # the body is stored de-chunked, so no header may claim chunked framing
    assert rec.http_headers.get_header("Transfer-Encoding") is None
    assert payload.startswith(b"<!DOCTYPE html>")  # no chunk-size line
    assert rec.rec_headers.get_header("WARC-Payload-Digest") == b32(served.sha1)


def test_repeated_set_cookie_headers_are_all_kept(crawl, site):
    rec, _ = response_for(crawl, site.url("www.example-a.test", "/cookies"))
    cookies = [v for k, v in rec.http_headers.headers if k.lower() == "set-cookie"]
    assert cookies == ["session=abc123; Path=/", "theme=dark; Path=/; Max-Age=3600"]


def test_request_record_has_the_real_request_line_and_links_to_its_response(crawl, site):
    url = site.url("www.example-a.test", "/search?q=archive&page=2")
    recs = all_records(crawl)
    response = next(
        r
        for r in recs
        if r.rec_type == "response" and r.rec_headers.get_header("WARC-Target-URI") == url
    )
    request = next(
        r
        for r in recs
        if r.rec_type == "request" and r.rec_headers.get_header("WARC-Target-URI") == url
    )
    assert request.http_headers.protocol == "GET"
    assert request.http_headers.statusline == "/search?q=archive&page=2 HTTP/1.1"
    assert request.http_headers.get_header("Host") == f"www.example-a.test:{site.port}"
    assert "harvestflow" in request.http_headers.get_header("User-Agent")
    rid = response.rec_headers.get_header("WARC-Record-ID")
    assert request.rec_headers.get_header("WARC-Concurrent-To") == rid
    meta = next(
        r
        for r in recs
        if r.rec_type == "metadata" and r.rec_headers.get_header("WARC-Target-URI") == url
    )
    assert meta.rec_headers.get_header("WARC-Concurrent-To") == rid
    assert b"hopsFromSeed: L" in meta.payload
    assert f"via: {site.url('www.example-a.test', '/')}\r\n".encode() in meta.payload
    assert f"sourceTag: {site.url('www.example-a.test', '/')}\r\n".encode() in meta.payload
    assert (
        f"outlink: {site.url('www.example-a.test', '/search?q=archive&page=3')} L".encode()
        in meta.payload
    )


def test_warcinfo_comes_first_and_describes_the_job(crawl):
    (data,) = crawl.data_warcs()
    first = next(records(data))
    assert first.rec_type == "warcinfo"
    for field in (
        b"software:",
        b"operator:",
        b"isPartOf: job 7",
        b"description: template ",
        b"robots: obey",
    ):
        assert field in first.payload
    assert first.rec_headers.get_header("WARC-Filename") == data.name


def test_srcset_picture_css_and_style_resources_are_captured(crawl, site):
    captured = {f[3] for f in crawl.log_fields() if f[1] == "200"}
    s = lambda p: site.url("static.example-a.test", p)  # noqa: E731
    for path in [
        "/img/hero-800.png",
        "/img/hero-1200.png",  # img srcset
        "/img/pic-large.png",
        "/img/pic-medium.png",
        "/img/pic-small.png",  # picture/source
        "/img/attr-bg.png",  # style= attribute
        "/img/inline-style-bg.png",  # <style>
        "/img/css-bg.png",
        "/img/bullet.gif",  # url() in a CSS file
        "/css/imported.css",
        "/img/imported-bg.png",
        "/css/print.css",  # @import chain
        "/fonts/sample.woff",
        "/img/deep.png",
        "/img/deep-2x.png",
    ]:
        assert s(path) in captured, path
    line = crawl.line_for(s("/img/imported-bg.png"))
    assert line[4] == "EEE"  # page -E-> site.css -E-> imported.css -E-> image


def test_meta_refresh_redirects_and_404_are_recorded(crawl, site):
    a = lambda p: site.url("www.example-a.test", p)  # noqa: E731
    assert crawl.line_for(a("/refreshed.html"))[4].endswith("R")
    assert crawl.line_for(a("/redirect-301"))[1] == "301"
    assert crawl.line_for(a("/redirect-302"))[1] == "302"
    assert crawl.line_for(a("/missing.html"))[1] == "404"
    assert crawl.line_for(a("/section/sub/deep.html"))[4] == "LLL"


def test_seed_redirect_makes_its_target_a_seed(crawl, site):
    seeds = (crawl.out / "reports" / "seeds-report.txt").read_text().splitlines()
    assert seeds[0] == "[code] [status] [seed] [redirect]"
    line = next(s for s in seeds if "www.example-b.test" in s)
    assert line.split() == [
        "301",
        "CRAWLED",
        site.url("www.example-b.test", "/"),
        site.url("example-b.test", "/"),
    ]
    assert crawl.line_for(site.url("example-b.test", "/news.html"))[1] == "200"


def test_crawl_log_has_heritrix_12_fields(crawl):
    for f in crawl.log_fields():
        assert len(f) == 12, f
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", f[0])
        assert re.fullmatch(r"#\d{3}", f[7])
        if int(f[1]) > 0:
            assert re.fullmatch(r"\d{17}\+\d+", f[8])
            assert f[9].startswith("sha1:")
    raw = crawl.crawl_log[0]
    assert re.match(r"\S+ +-?\d+ +(\d+|-) ", raw)
    assert len(raw.split(" ")[1]) <= 5


def test_robots_txt_is_obeyed_and_logged(crawl, site):
    line = crawl.line_for(site.url("www.example-a.test", "/private/secret.html"))
    assert line[1] == "-9998" and line[11] == "robotExcluded"
    assert not site.served("www.example-a.test", "/private/secret.html")
    robots = crawl.line_for(site.url("www.example-a.test", "/robots.txt"))
    assert robots[1] == "200" and robots[4] == "P"


def test_javascript_and_mailto_links_are_not_urls_to_log(crawl, site):
    # (out-of-scope links, -5000, are proven in test_cli.py: in this job's domain scope
    # every linked host is in scope, and trap.example-c is never linked)
    assert not any("mailto:" in f[3] or "javascript:" in f[3] for f in crawl.log_fields())


def test_reports_have_heritrix_headers(crawl):
    reports = crawl.out / "reports"
    first = {p.name: p.read_text().splitlines()[0] for p in reports.glob("*.txt")}
    assert first["hosts-report.txt"].startswith("[#urls] [#bytes] [host] [#robots] [#remaining]")
    assert first["mimetype-report.txt"] == "[#urls] [#bytes] [mime-types]"
    assert first["responsecode-report.txt"] == "[#urls] [rescode]"
    assert first["seeds-report.txt"] == "[code] [status] [seed] [redirect]"
    assert first["frontier-report.txt"].startswith("queue precedence currentSize totalEnqueues")
    crawl_report = (reports / "crawl-report.txt").read_text()
    assert "crawl status: Finished" in crawl_report
    assert "URI successes: " in crawl_report and "duplicate-by-hash URIs: 0" in crawl_report
    codes = dict(
        reversed(line.split())
        for line in (reports / "responsecode-report.txt").read_text().splitlines()[1:]
    )
    ok = sum(1 for f in crawl.log_fields() if f[1] == "200")
    assert int(codes["200"]) == ok and ok >= 35 and codes["-9998"] == "1"


def test_progress_statistics_ends_with_crawl_ended(crawl):
    lines = (crawl.out / "logs" / "progress-statistics.log").read_text().splitlines()
    assert "discovered" in lines[0] and "CRAWL ENDED" in lines[-1]


def test_metadata_warc_holds_spec_logs_reports_and_cdx(crawl):
    meta = crawl.out / "warcs" / "7-metadata-1.warc.gz"
    uris = {}
    for rec in records(meta):
        uris[rec.rec_headers.get_header("WARC-Target-URI")] = rec.payload
    q = "?harvestid=2&jobid=7"
    for name in (
        "setup/job.json",
        "logs/crawl.log",
        "logs/progress-statistics.log",
        "reports/crawl-report.txt",
        "reports/hosts-report.txt",
        "index/cdx",
    ):
        assert f"metadata://harvestflow/crawl/{name}{q}" in uris, name
    cdx = uris[f"metadata://harvestflow/crawl/index/cdx{q}"].decode().splitlines()
    assert cdx[0] == " CDX N b a m s k r M S V g"
    body = cdx[1:]
    assert body == sorted(body, key=lambda s: s.encode())
    responses = [r for r in all_records(crawl) if r.rec_type in ("response", "revisit")]
    assert len(body) == len(responses)
    assert all(len(line.split(" ")) == 11 for line in body)
    # lines recorded during the crawl equal the reference indexer's for the data WARCs
    ref = subprocess.run(
        [str(ORACLE_BIN / "cdxj-indexer"), "-11", *map(str, crawl.data_warcs())],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")
    expected = [ln for ln in ref.split("\n") if ln and not ln.startswith(" CDX")]
    assert body == sorted(expected, key=lambda s: s.encode())


def test_summary_counts_domains_with_stop_reasons(crawl):
    s = crawl.summary
    assert s["status"] == "complete" and s["job_id"] == 7
    a = s["domains"]["example-a.test"]
    assert a["config_id"] == 1 and a["stop_reason"] == 0 and a["objects"] >= 35
    assert s["domains"]["example-b.test"]["objects"] >= 3
    assert s["warcs"] == [p.name for p in crawl.data_warcs()]
    assert s["metadata_warc"] == "7-metadata-1.warc.gz"
