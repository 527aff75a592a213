"""A pause through the gate middlewares while a real crawl waits on politeness: the requests
waiting in a host's queue go back to the frontier, so nothing reaches the site until resume.

What is measured at the test server (which requests it received), never our speed.
"""

from __future__ import annotations

import json
import time

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.support.control_site import (
    PAUSE_S,
    FlatSite,
    crawl_log_lines,
    crawler_process,
    ends_cleanly,
    prepared_job,
    wait_until,
)

pytestmark = pytest.mark.services


def test_a_pause_stops_the_requests_waiting_for_the_politeness_delay(db_engine, tmp_path):
    """Politeness on (1 s after each fetch, one connection per host, 8 requests in the
    downloader): the requests waiting in the host's queue go back to the frontier, so the
    pause is applied after the fetch in flight, and from the crawler's answer until resume the
    site gets nothing; after resume the crawl finishes with every page captured once."""
    from harvest.control import request
    from harvestflow.job_actions import wait_for

    site = FlatSite()
    try:
        job_id, job_json = prepared_job(db_engine, site, tmp_path)
        spec = json.loads(job_json.read_text())
        spec["template"].update(
            min_delay_ms=1000, max_delay_ms=1000, delay_factor=1.0, concurrent_requests=8,
            connections_per_host=1, max_hops=3,
        )  # fmt: skip
        job_json.write_text(json.dumps(spec))
        out = job_json.parent
        with crawler_process(job_json, out, tmp_path / "crawler.out") as proc:
            wait_until("the crawl fetching pages", lambda: site.count(
                lambda p: p.startswith("/p/")) >= 3)  # fmt: skip
            asked_at = site.count()
            action = request(job_id, "pause", {}, "alice")
            paused = wait_for(action, 90)
            answered_at = site.count()
            assert paused is not None and paused.state == "applied", paused
            assert "paused: frontier saved" in (paused.message or "")
            assert "unsent put back" in (paused.message or ""), "no request was waiting"
            # between the ask and the answer: at most the fetch in flight when it was asked and
            # one started before the next control poll (0.5 s) saw the ask — not the queue
            # the old pause let out, one per delay
            assert answered_at - asked_at <= 2, site.requests[asked_at:]
            time.sleep(PAUSE_S)  # three politeness delays
            assert site.count() == answered_at, (
                f"requests after the pause was applied: {site.requests[answered_at:]}"
            )
            assert proc.poll() is None, "the paused crawler ended"

            resumed = wait_for(request(job_id, "resume", {}, "alice"), 90)
            assert resumed is not None and resumed.state == "applied", resumed
            wait_until("requests after resume", lambda: site.count() > answered_at)
            ends_cleanly(proc, tmp_path / "crawler.out", 180)
    finally:
        site.stop()

    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete"
    pages = ["/", *(f"/p/{n}" for n in range(1, FlatSite.PAGES + 1))]
    served = {p: site.count(lambda x, p=p: x == p) for p in pages}
    assert served == dict.fromkeys(pages, 1), served  # each page requested once
    base = f"http://www.example-a.test:{site.port}"
    urls = sorted(base + p for p in pages)
    # (robots.txt and the sitemap the crawler looks for are fetched too: not pages)
    logged = [f[3] for f in crawl_log_lines(out) if f[1] == "200" and f[3] in urls]
    assert sorted(logged) == urls  # one crawl.log line each
    captured = []
    for warc in sorted((out / "warcs").glob("*.warc.gz")):
        with warc.open("rb") as fh:
            captured += [
                r.rec_headers.get_header("WARC-Target-URI")
                for r in ArchiveIterator(fh)
                if r.rec_type == "response"
            ]
    assert sorted(u for u in captured if u in urls) == urls  # one capture each
