"""The crawler's supervisor gone: SIGHUP, however many times it comes, is one graceful stop.

Why: :func:`crawler.launch.crawl_in_subprocess` starts the crawler with PR_SET_PDEATHSIG =
SIGHUP, so that a crawl ends with the task runner that supervises it (a worker killed with its
process group, a machine's service manager stopping it): never an orphan crawling outside any
lease and any log. The kernel sends that signal once per thread of the parent that exits, so
several arrive together, and Scrapy takes a second SIGTERM as "stop uncleanly now". Here the
first SIGHUP closes the spider (reason ``owner_gone``: summary.json ``unfinished``, the frontier
saved, the WARCs closed) and the later ones are ignored; the job's retry takes its lease over
once it expires and resumes the job.
"""

from __future__ import annotations

import logging
import signal
from typing import Any

from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import reactor

log = logging.getLogger(__name__)

OWNER_GONE_SIGNAL = signal.SIGHUP
REASON = "owner_gone"


class OwnerWatch:
    """Extension: the first SIGHUP closes the spider, resumable; the others are ignored."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stopping = False
        signal.signal(OWNER_GONE_SIGNAL, self._on_signal)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> OwnerWatch:
        return cls(crawler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.stopping:
            return
        self.stopping = True
        reactor.callFromThread(self._close)

    def _close(self) -> None:
        engine = self.crawler.engine
        if engine is None or not engine.running:
            return
        log.warning("the process supervising this crawl is gone: saving the frontier, stopping")
        closing = deferred_from_coro(engine.close_spider_async(reason=REASON))
        closing.addErrback(lambda f: log.error("close after the supervisor's loss: %s", f))
