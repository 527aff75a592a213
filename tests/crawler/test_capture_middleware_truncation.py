"""Size limits: a response past max_response_bytes is kept cut, marked WARC-Truncated and
lenTrunc; WARC files rotate at warc_max_size with consecutive serial numbers."""

from __future__ import annotations

import subprocess

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.support.crawl import FETCH_CLIENTS, REPO, make_job, run_crawl


@pytest.mark.parametrize("fetch_client", FETCH_CLIENTS)
def test_truncation_and_rotation(site, tmp_path, fetch_client):
    big = site.url("static.example-a.test", "/big.bin?size=300000")
    job = make_job(
        site,
        [site.url("www.example-a.test", "/"), big],
        {"max_response_bytes": 50_000, "warc_max_size": 10_000, "fetch_client": fetch_client},
    )
    result = run_crawl(job, tmp_path / "job")
    line = result.line_for(big)
    assert line[1] == "200" and line[2] == "50000" and "lenTrunc" in line[11]
    found = None
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if (
                    rec.rec_type == "response"
                    and rec.rec_headers.get_header("WARC-Target-URI") == big
                ):
                    found = (
                        rec.rec_headers.get_header("WARC-Truncated"),
                        len(rec.content_stream().read()),
                    )
    assert found == ("length", 50_000)
    # a declared Content-Length far past the limit is still captured, cut (not cancelled)
    huge = site.url("static.example-a.test", "/big.bin?size=2000000")
    result2 = run_crawl(
        make_job(site, [huge], {"max_response_bytes": 50_000, "fetch_client": fetch_client}),
        tmp_path / "huge",
        timeout=60,
    )
    line = result2.line_for(huge)
    assert line[1] == "200" and line[2] == "50000" and "lenTrunc" in line[11]
    warcs = result.data_warcs()
    assert len(warcs) >= 3
    assert [int(p.name.split("-")[3]) for p in warcs] == list(range(len(warcs)))
    # each file was closed near the limit (a file ends after the record that crossed it)
    assert all(p.stat().st_size < 10_000 + 60_000 for p in warcs)
    check = subprocess.run(
        [str(REPO / ".venv/bin/warcio"), "check", *map(str, warcs)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout
