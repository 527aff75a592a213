"""Scrapy extension: parked frontier URLs become requests as the scheduler's queue drains.

Why an extension: the frontier (:mod:`crawler.frontier`) keeps at most ``max_queued_requests``
requests in Scrapy's scheduler and parks the rest in the persisted frontier; something must ask
it for more while the crawl runs, and must keep the spider open while URLs are parked (Scrapy
closes a spider whose scheduler and downloader are empty). A timer asks every ``POLL_S``; an
idle spider asks at once.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from twisted.internet import task

from crawler.context import context_of

log = logging.getLogger(__name__)

POLL_S = 0.5  # at 100 URLs/s a half-full queue of 50,000 lasts minutes: the poll is cheap
PARKED_STAT = "frontier/parked_requests_made"


class FrontierRefill:
    """Extension, always enabled: the bound on the requests held in memory is the template's."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.ctx = context_of(crawler)
        self.loop: task.LoopingCall | None = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.idle, signal=signals.spider_idle)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierRefill:
        return cls(crawler)

    def _queued(self) -> int:
        engine = self.crawler.engine
        scheduler = engine.scheduler if engine is not None else None
        return len(scheduler) if scheduler is not None else 0  # type: ignore[arg-type]

    def opened(self, spider: Any) -> None:
        self.ctx.frontier.queued_in_memory = self._queued
        self.loop = task.LoopingCall(self.tick)
        self.loop.start(POLL_S, now=False)

    def tick(self) -> int:
        """Schedule the requests of parked URLs the queue has room for; returns their number."""
        if not self.ctx.start_done:  # the start list reads the frontier's first part itself
            return 0
        requests = self.ctx.frontier.refill()
        engine = self.crawler.engine
        if engine is None or not requests:
            return 0
        for request in requests:
            engine.crawl(request)
        self.crawler.stats.inc_value(PARKED_STAT, len(requests))
        log.debug("%d parked URLs queued", len(requests))
        return len(requests)

    def idle(self, spider: Any) -> None:
        if self.ctx.frontier.parked:
            self.tick()
            raise DontCloseSpider

    def closed(self, spider: Any, reason: str) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
