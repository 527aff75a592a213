"""Politeness measured at the server: per host, the gap between the end of one response and
the start of the next request respects clamp(factor × duration, min, max) and Crawl-delay."""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request
from scrapy.core.downloader import Slot

from crawler.capture_middleware import start_fetch
from crawler.errors import FetchedByBrowser
from crawler.politeness import politeness_delay
from tests.support.crawl import make_job, run_crawl

MIN_DELAY = 0.25
FACTOR = 5.0
SLOW = 0.2  # /slow?ms=200 takes 0.2 s: the next fetch must wait ≥ 5 × 0.2 = 1 s
CRAWL_DELAY = 0.5  # example-b.test/robots.txt
TOLERANCE = 0.03


def test_request_gaps_per_host_respect_the_politeness_rule(fresh_site, tmp_path):
    site = fresh_site
    seeds = [
        site.url("www.example-a.test", "/slow?ms=200"),
        site.url("www.example-a.test", "/"),
        site.url("example-b.test", "/"),
    ]
    template = {
        "delay_factor": FACTOR,
        "min_delay_ms": int(MIN_DELAY * 1000),
        "max_delay_ms": 2000,
        "connections_per_host": 1,
        "max_hops": 1,
    }
    result = run_crawl(make_job(site, seeds, template), tmp_path / "job")
    assert result.summary["status"] == "complete"
    by_host = defaultdict(list)
    for req in sorted(site.requests, key=lambda r: r.started):
        by_host[req.host].append(req)
    assert len(by_host["www.example-a.test"]) >= 10
    checked = 0
    for host, reqs in by_host.items():
        floor = CRAWL_DELAY if host == "example-b.test" else MIN_DELAY
        for prev, nxt in itertools.pairwise(reqs):
            gap = nxt.started - prev.ended
            assert gap >= floor - TOLERANCE, (host, prev.path, nxt.path, gap)
            if prev.path.startswith("/slow"):
                assert gap >= FACTOR * SLOW - TOLERANCE, (prev.path, gap)
            checked += 1
    assert checked >= 15
    assert any(r.path.startswith("/slow") for r in by_host["www.example-a.test"][:-1])


def test_no_politeness_fetches_a_host_in_parallel(fresh_site, tmp_path):
    site = fresh_site
    result = run_crawl(
        make_job(site, [site.url("www.example-a.test", "/")], {"connections_per_host": 4}),
        tmp_path / "job",
    )
    assert result.summary["status"] == "complete"
    reqs = sorted(site.served("static.example-a.test"), key=lambda r: r.started)
    overlapping = sum(1 for a, b in itertools.pairwise(reqs) if b.started < a.ended)
    gaps = [b.started - a.ended for a, b in itertools.pairwise(reqs)]
    assert overlapping > 0 or min(gaps) < MIN_DELAY / 5


def test_delay_rule_with_heritrix_defaults_and_crawl_delay_cap():
    rule = lambda d, cd=None: politeness_delay(d, 5.0, 3.0, 30.0, cd, 300.0)  # noqa: E731
    assert rule(0.1) == 3.0  # 5 × 0.1 s is under the minimum
    assert rule(2.0) == 10.0  # 5 × 2 s
    assert rule(60.0) == 30.0  # the maximum
    assert rule(0.1, 1.0) == 3.0  # a Crawl-delay below our delay changes nothing
    assert rule(0.1, 45.0) == 45.0  # above it: honoured
    assert rule(0.1, 3600.0) == 300.0  # honoured up to the cap


def test_a_request_dropped_at_its_turn_leaves_the_turn_to_the_hosts_next_request():
    """A queued request whose URL a rendering page's browser fetched meanwhile is dropped as
    its fetch starts, nothing sent to the host: the host's slot, which Scrapy's downloader
    marked as seen when it handed the request over, lets the host's next request (often the
    browser's own fetch of that URL, which its page waits for) start at once, not a delay
    later. A request that is fetched keeps its turn."""
    delay = 3600.0  # a turn taken is not given back in any run of this test
    slot = Slot(concurrency=1, delay=delay, jitter=0)
    downloader = SimpleNamespace(slots={"queue.test": slot})
    ctx: Any = SimpleNamespace(
        renderer=object(),
        browser_claimed={"claimed"},
        fetch_started=set(),
        crawler=SimpleNamespace(engine=SimpleNamespace(downloader=downloader)),
    )

    def penalty() -> float:  # Scrapy's wait before the slot's next request (_process_queue)
        return slot.download_delay() - time.monotonic() + slot.lastseen

    class Call:  # the call the downloader schedules for the slot's next turn
        cancelled = False

        def cancel(self) -> None:
            self.cancelled = True

    def handed_over(key: str) -> tuple[Request, Call]:
        # as the downloader hands a request over: the slot seen now, its next turn scheduled
        slot.lastseen = time.monotonic()
        slot.latercall = call = Call()
        meta = {"hf": {"key": key}, "download_slot": "queue.test"}
        return Request(f"http://queue.test/{key}", meta=meta), call

    claimed, call = handed_over("claimed")
    with pytest.raises(FetchedByBrowser):
        start_fetch(ctx, claimed)
    assert penalty() <= 0
    # the downloader runs the slot's queue as the dropped request leaves it, unless a call
    # is still scheduled
    assert call.cancelled and slot.latercall is None
    fetched, call = handed_over("fetched")
    start_fetch(ctx, fetched)
    assert penalty() > delay - 60 and not call.cancelled and slot.latercall is call
    assert ctx.fetch_started == {"fetched"}
