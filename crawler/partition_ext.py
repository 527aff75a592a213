"""Scrapy extension of a partition child: reads its inbox, reports idle/busy, stops on request.

Why the spider is kept open when idle: another partition may still hand it URLs, so only the
parent, which sees every child, can tell that the job is over (all children idle and every
inbox read to its end). The child writes a status file on a short timer — idle only when its
engine has nothing scheduled, downloading or being parsed *and* its inbox is read to the end —
and closes with reason ``finished`` once the parent's stop file appears while it is idle.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import task

from crawler.context import BYTES_DONE, FAILURES, URLS_DONE, context_of
from crawler.partitioning.handoff import read_inbox, write_status
from crawler.state import FrontierState

log = logging.getLogger(__name__)

POLL_S = 0.1  # a tick reads the inbox's new bytes and rewrites the status file (no fsync)
SYNC_S = 1.0  # fsync of the inboxes written to (see crawler/partitioning/handoff.py)


class PartitionCoordinator:
    """Extension, enabled only in a partition child."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.ctx = context_of(crawler)
        self.interval_s = crawler.settings.getfloat("HARVESTFLOW_PROGRESS_INTERVAL", 10.0)
        assert self.ctx.partition is not None
        self.partition = self.ctx.partition
        self.offset = int(self.ctx.state.get_meta("inbox_offset") or 0)
        self.loop: task.LoopingCall | None = None
        self.parent_pid = os.getppid()
        self.counts: dict[int, int] = {}
        self.counts_at = 0.0
        self.closing = False
        self.synced_at = 0.0
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.idle, signal=signals.spider_idle)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PartitionCoordinator:
        return cls(crawler)

    def opened(self, spider: Any) -> None:
        self.loop = task.LoopingCall(self.tick)
        self.loop.start(POLL_S, now=True)

    def _engine_idle(self) -> bool:
        engine = self.crawler.engine
        try:
            # parked URLs (crawler/frontier_refill.py) are work still to do
            return engine is not None and engine.spider_is_idle() and not self.ctx.frontier.parked
        except RuntimeError:  # no slot yet (opening) or any more (closing)
            return False

    def _pull(self) -> int:
        """Schedule what other partitions handed us; returns the number of new requests."""
        if not self.ctx.start_done:  # the start list would schedule them a second time
            return 0
        entries, offset = read_inbox(self.partition.inbox(self.partition.index), self.offset)
        if offset == self.offset:
            return 0
        requests = self.ctx.frontier.intake(entries, offset)
        self.offset = offset
        engine = self.crawler.engine
        assert engine is not None
        for request in requests:
            engine.crawl(request)
        return len(requests)

    def tick(self) -> None:
        if self.closing:
            return
        if os.getppid() != self.parent_pid:  # the parent died: stop like a crash would
            log.error("partition parent %s is gone; stopping", self.parent_pid)
            os._exit(70)
        self._pull()
        idle = self._engine_idle()
        now = time.monotonic()
        outbox = self.ctx.frontier.outbox
        if outbox is not None and outbox.dirty and (idle or now - self.synced_at >= SYNC_S):
            outbox.sync()  # before an idle status: the parent may stop us on it
            self.synced_at = now
        if now - self.counts_at >= self.interval_s / 2 or idle:
            self.counts = self.ctx.state.counts()
            self.counts_at = now
        stats = self.crawler.stats
        write_status(
            self.partition.status_file(self.partition.index),
            {
                "pid": os.getpid(),
                "idle": idle,
                "consumed": self.offset,
                "urls_done": stats.get_value(URLS_DONE, 0),
                "bytes_done": stats.get_value(BYTES_DONE, 0),
                "failures": stats.get_value(FAILURES, 0),
                "queued": self.counts.get(FrontierState.QUEUED, 0),
                "discovered": sum(
                    n for s, n in self.counts.items() if s != FrontierState.HANDED_OFF
                ),
                "busy": len(self.crawler.engine.downloader.active) if self.crawler.engine else 0,
            },
        )
        if idle and self.partition.stop_file.exists():
            self.closing = True
            engine = self.crawler.engine
            assert engine is not None
            closing = deferred_from_coro(engine.close_spider_async(reason="finished"))
            closing.addErrback(lambda f: log.error("partition close failed: %s", f))

    def idle(self, spider: Any) -> None:
        if not self.partition.stop_file.exists():
            raise DontCloseSpider

    def closed(self, spider: Any, reason: str) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        if self.ctx.frontier.outbox is not None:
            self.ctx.frontier.outbox.sync()
