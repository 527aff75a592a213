"""Deduplication against an earlier crawl: identical payloads become revisit records
(identical-payload-digest) annotated duplicate:digest, text is excluded by the template's MIME
filter, and a page with an ETag is fetched conditionally and recorded as a 304 revisit."""

from __future__ import annotations

import subprocess

from warcio.archiveiterator import ArchiveIterator

from tests.support.crawl import REPO, make_job, run_crawl

PROFILE = "http://netpreserve.org/warc/1.1/revisit/"


def build_dedup_index(warcs, path):
    """The dedup index file format of indexing/ (the test's own writer, from the WARCs)."""
    lines = []
    for warc in warcs:
        with warc.open("rb") as fh:
            it = ArchiveIterator(fh)
            for rec in it:
                if rec.rec_type != "response":
                    continue
                h = rec.rec_headers
                etag = rec.http_headers.get_header("ETag") or "-"
                lm = rec.http_headers.get_header("Last-Modified") or "-"
                it.read_to_end(rec)
                lines.append(
                    "\t".join(
                        [
                            h.get_header("WARC-Target-URI"),
                            h.get_header("WARC-Payload-Digest"),
                            h.get_header("WARC-Date"),
                            warc.name,
                            str(it.get_record_offset()),
                            h.get_header("WARC-Record-ID"),
                            etag,
                            lm,
                        ]
                    )
                )
    lines.sort(key=lambda s: s.encode())
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_second_crawl_writes_revisits_and_304s(fresh_site, tmp_path):
    site = fresh_site
    seeds = [site.url("www.example-a.test", "/")]
    first = run_crawl(make_job(site, seeds, job_id=21, harvest_id=5), tmp_path / "first")
    index = tmp_path / "dedup.txt"
    build_dedup_index(first.data_warcs(), index)
    second = run_crawl(
        make_job(site, seeds, job_id=22, harvest_id=5, dedup_index=str(index)), tmp_path / "second"
    )
    proc = subprocess.run(
        [str(REPO / ".venv/bin/warcio"), "check", *map(str, second.data_warcs())],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout

    revisits, responses = {}, {}
    for warc in second.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                url = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "revisit":
                    revisits[url] = rec
                elif rec.rec_type == "response":
                    responses[url] = rec
    logo = site.url("static.example-a.test", "/img/logo.png")
    rec = revisits[logo]
    assert rec.rec_headers.get_header("WARC-Profile") == PROFILE + "identical-payload-digest"
    assert rec.rec_headers.get_header("WARC-Refers-To-Target-URI") == logo
    assert rec.rec_headers.get_header("WARC-Refers-To-Date")
    assert rec.rec_headers.get_header("WARC-Refers-To").startswith("<urn:uuid:")
    assert second.line_for(logo)[11] == "duplicate:digest"
    # text is never deduplicated with ^text/ excluded
    front = site.url("www.example-a.test", "/")
    assert front in responses and front not in revisits
    # images: all revisits
    images = [u for u in revisits if u.endswith(".png")]
    assert len(images) >= 10
    # the ETag page was asked for conditionally and recorded as a 304 revisit
    etag_url = site.url("www.example-a.test", "/etag.html")
    asked = site.served("www.example-a.test", "/etag.html")[-1]
    assert asked.header("If-None-Match") == '"sample-etag-v1"' and asked.status == 304
    rec = revisits[etag_url]
    assert rec.rec_headers.get_header("WARC-Profile") == PROFILE + "server-not-modified"
    assert rec.http_headers.get_statuscode() == "304"
    line = second.line_for(etag_url)
    assert line[1] == "304" and line[11] == "duplicate:server-not-modified"
    report = (second.out / "reports" / "crawl-report.txt").read_text()
    assert f"duplicate-by-hash URIs: {len(revisits) - 1}" in report
    assert "not-modified URIs: 1" in report
