"""Scrapy requests of frontier URLs: the spider's callbacks, a priority from the hops, the meta.

Why apart from the frontier's decisions: every path that queues a URL (seeds, discovered links,
hand-offs, a resumed frontier, a rendering page's requests, a QA patch) must build the same
request, with the ``hf`` meta the capture middleware, the spider and crawl.log read back.
"""

from __future__ import annotations

import logging
from typing import Any

import scrapy

from crawler import state as st
from crawler.crawllog_writer import CrawlLog, LogEntry
from crawler.jobspec import JobSpec
from crawler.state import BROWSER_PRIORITY
from harvestflow.formats.fetch_status import FetchStatus

log = logging.getLogger(__name__)


class RequestBuilder:
    """Builds the job's requests; ``callbacks`` are the spider's (set when it is made)."""

    def __init__(self, spec: JobSpec, state: st.CrawlState, crawl_log: CrawlLog) -> None:
        self.spec = spec
        self.state = state
        self.crawl_log = crawl_log
        self.callbacks: tuple[Any, Any] = (None, None)

    def make(
        self, url: str, key: str, hops: str, via: str | None, seed: str | None, context: str | None
    ) -> scrapy.Request | None:
        """The request of a frontier URL; None (failed as unfetchable, logged) when Scrapy
        cannot make one of it."""
        links = hops.count("L")
        priority = -10 * links + (5 if hops[-1:] in ("E", "R") else 0)
        if context == "browser":  # handed off by another partition's rendering page
            priority = BROWSER_PRIORITY
        meta = {
            "hf": {"key": key, "hops": hops, "via": via, "seed": seed or url, "context": context},
            "download_timeout": self.spec.template.download_timeout_s,
        }
        try:
            return scrapy.Request(
                url,
                callback=self.callbacks[0],
                errback=self.callbacks[1],
                meta=meta,
                priority=priority,
                dont_filter=True,
            )
        except ValueError as exc:
            self.state.finish(key, st.FrontierState.FAILED, FetchStatus.UNFETCHABLE_URI, 0, False)
            self.crawl_log.write(
                LogEntry(
                    FetchStatus.UNFETCHABLE_URI,
                    url,
                    hops,
                    via,
                    seed=seed,
                    annotations=["err=" + type(exc).__name__],
                )
            )
            return None
