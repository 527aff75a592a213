"""Past ``max_queued_requests`` accepted URLs wait in the persisted frontier, not in memory, and
the crawl still fetches each URL it accepts exactly once and ends only when none is left
(crawler/frontier.py, crawler/frontier_refill.py). The kill-and-resume of a crawl with parked
URLs is tests/crawler/test_state_resume.py."""

from __future__ import annotations

import re
from collections import Counter

from tests.support.crawl import CrawlResult, fetched, make_job, run_crawl


def _parked_made(result: CrawlResult) -> int:
    """From Scrapy's stats, dumped in the crawler's log at its end."""
    log = (result.out / "logs" / "crawler.log").read_text()
    assert "Dumping Scrapy stats" in log
    found = re.search(r"'frontier/parked_requests_made': (\d+)", log)
    return int(found.group(1)) if found else 0


def test_a_crawl_past_its_in_memory_bound_fetches_what_an_unbounded_one_does_once(site, tmp_path):
    seeds = [site.url("www.example-a.test", "/"), site.url("example-b.test", "/")]
    unbounded = run_crawl(make_job(site, seeds), tmp_path / "unbounded")
    bounded = run_crawl(make_job(site, seeds, {"max_queued_requests": 2}), tmp_path / "bounded")

    assert bounded.summary["status"] == "complete"
    urls = fetched(bounded.crawl_log)
    assert [u for u, n in Counter(urls).items() if n > 1] == []
    assert sorted(urls) == sorted(fetched(unbounded.crawl_log))
    assert len(urls) > 10  # the site is larger than the bound many times over
    # most of them waited on disk: made requests only once the queue had drained
    assert _parked_made(bounded) > len(urls) // 2
    assert _parked_made(unbounded) == 0
