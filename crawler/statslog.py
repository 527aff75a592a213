"""progress-statistics.log and the progress line a task log shows at a steady interval.

Why both: NetarchiveSuite reads Heritrix's progress-statistics.log (its last line says whether
the crawl ended on its own), and a curator watching the Airflow task log wants one readable
line every few seconds: URLs done and queued, bytes, rate, the busiest host queues.
"""

from __future__ import annotations

import datetime as dt
import logging
import resource
import time
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from twisted.internet import task

from crawler.context import BYTES_DONE, FAILURES, RENDERED, URLS_DONE, context_of
from crawler.crawllog_writer import PROGRESS_HEADER as HEADER
from crawler.state import FrontierState
from harvestflow.formats.fields import clean_field
from harvestflow.monitoring.push import CrawlGauges

log = logging.getLogger(__name__)
progress_log = logging.getLogger("crawler.progress")

END_LINES = {
    "finished": "CRAWL ENDED - Finished",
    "closespider_timeout": "CRAWL ENDING - Timelimit hit",
    "stopped_by_operator": "CRAWL ENDED - Stopped by operator",
}


class ProgressStatistics:
    """Extension: one progress-statistics.log line and one progress log line per interval."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.ctx = context_of(crawler)
        self.interval_s = crawler.settings.getfloat("HARVESTFLOW_PROGRESS_INTERVAL", 10.0)
        self.path = self.ctx.jobdir.progress_log
        new = not self.path.exists()
        self.fh = self.path.open("a", encoding="utf-8", buffering=1)
        if new:
            self.fh.write(HEADER + "\n")
        self.loop: task.LoopingCall | None = None
        self.last = (time.monotonic(), 0, 0)
        part = self.ctx.partition.index if self.ctx.partition is not None else None
        self.gauges = CrawlGauges.from_settings(self.ctx.spec.job_id, part)  # to /metrics
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressStatistics:
        return cls(crawler)

    def opened(self, spider: Any) -> None:
        self.loop = task.LoopingCall(self.tick)
        self.loop.start(self.interval_s, now=False)

    def _busy(self) -> int:
        engine = self.crawler.engine
        return len(engine.downloader.active) if engine is not None else 0

    def tick(self) -> None:
        ctx = self.ctx
        stats = self.crawler.stats
        urls_done = stats.get_value(URLS_DONE, 0)  # by this run; with the earlier runs':
        job_done = ctx.urls_done_before + urls_done
        bytes_done = stats.get_value(BYTES_DONE, 0)
        failures = stats.get_value(FAILURES, 0)
        now = time.monotonic()
        t0, urls0, bytes0 = self.last
        interval = max(now - t0, 1e-6)
        elapsed = max(time.time() - ctx.started, 1e-6)
        counts = ctx.state.counts()
        queued = counts.get(FrontierState.QUEUED, 0)
        discovered = sum(counts.values())
        docs_now = (urls_done - urls0) / interval
        kb_now = (bytes_done - bytes0) / 1024 / interval
        mem_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = (
            f"{stamp} {discovered:>11} {queued:>11} {job_done:>11}"
            f" {docs_now:>7.2f}({urls_done / elapsed:.2f})"
            f" {kb_now:>7.0f}({bytes_done / 1024 / elapsed:.0f})"
            f" {failures:>13} {self._busy():>13} {mem_kb:>12} {0:>13} {0:>12} {0:>11} {0:>11}"
        )
        self.fh.write(line + "\n")
        self.last = (now, urls_done, bytes_done)
        if self.gauges is not None:
            self.gauges.send(
                urls_done=job_done,
                urls_queued=queued,
                urls_per_second=docs_now,
                pages_rendered=stats.get_value(RENDERED, 0),
                running=1,
            )
        hosts = sorted(ctx.state.queued_by_host().items(), key=lambda kv: -kv[1])[:3]
        # host names come from links a server wrote: one sanitiser keeps them on this line
        detail = ", ".join(f"{clean_field(h, 253)}:{n}" for h, n in hosts) or "none"
        if ctx.renderer is not None:  # pages in the browser tabs (crawler/rendering/renderer.py)
            detail += " | " + ctx.renderer.progress()
        progress_log.info(
            "crawl job %s: %d URLs done, %d queued, %.1f MB, %.1f URLs/s (%.1f now),"
            " %d failures | queues: %s",
            ctx.spec.job_id,
            job_done,
            queued,
            bytes_done / 1e6,
            urls_done / elapsed,
            docs_now,
            failures,
            detail,
        )

    def closed(self, spider: Any, reason: str) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.tick()
        if self.gauges is not None:
            self.gauges.send(running=0)
        end = END_LINES.get(reason, "CRAWL ENDING - Ended by operator")
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.fh.write(f"{stamp} {end}\n")
        self.fh.close()
