"""Politeness: Heritrix's per-host delay rule, robots.txt (protego) with its Crawl-delay.

Why: a national library's crawler must never hammer a site. Heritrix waits, after each fetch
from a host, ``clamp(delay_factor × fetch duration, min_delay, max_delay)`` before the next one
to the same host, raised to the host's robots.txt ``Crawl-delay`` when that is below a cap. Scrapy
already keeps one download slot per host with a delay between request *starts*; we set the
slot's delay after each fetch and restart its clock at the fetch's *end*, which turns Scrapy's
rule into Heritrix's.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from crawler.context import context_of
from crawler.errors import RobotsExcluded
from crawler.internals import cancel_scheduled_turn, robots_parser_of

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

log = logging.getLogger(__name__)


def delay_settings(settings: BaseSettings) -> tuple[float, float, float, float]:
    """The template's delay rule from the Scrapy settings: (delay factor, minimum s, maximum s,
    robots.txt Crawl-delay cap s); all three of the first zero means no politeness."""
    return (
        settings.getfloat("HARVESTFLOW_DELAY_FACTOR"),
        settings.getint("HARVESTFLOW_MIN_DELAY_MS") / 1000.0,
        settings.getint("HARVESTFLOW_MAX_DELAY_MS") / 1000.0,
        settings.getfloat("HARVESTFLOW_MAX_CRAWL_DELAY_S"),
    )


def politeness_delay(
    duration_s: float,
    factor: float,
    min_s: float,
    max_s: float,
    crawl_delay_s: float | None,
    crawl_delay_cap_s: float,
) -> float:
    """Seconds to wait after a fetch that took ``duration_s`` (Heritrix's rule).

    A robots.txt ``Crawl-delay`` raises the wait, honoured up to the cap (Heritrix's
    ``respectCrawlDelayUpToSeconds``): a site asking for an hour gets the cap, not our
    usual few seconds.
    """
    delay = min(max(factor * duration_s, min_s), max_s)
    if crawl_delay_s is not None:
        delay = max(delay, min(crawl_delay_s, crawl_delay_cap_s))
    return delay


def give_back_turn(crawler: Crawler | None, request: Request) -> None:
    """The host's next request may start at once: ``request`` took the host's turn and is
    dropped before contacting the host (crawler.capture_middleware.start_fetch).

    Why: Scrapy's downloader marks the host's slot as seen when it hands a request to the
    handler. A queued request dropped there (a rendering page's browser fetched its URL
    meanwhile) then held the host's next request a whole delay more — often that browser's own
    fetch, which its page waits for. The turn was due (the last real fetch ended at least a
    delay ago), so the host still gets its delay between two fetches.
    """
    engine = crawler.engine if crawler is not None else None
    key = request.meta.get("download_slot")
    slot = engine.downloader.slots.get(key) if engine is not None and key is not None else None
    if slot is not None:
        slot.lastseen = min(slot.lastseen, time.monotonic() - slot.delay)
        cancel_scheduled_turn(slot)


class Politeness:
    """Extension adjusting each host's download slot after every fetch."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.ctx = context_of(crawler)
        self.factor, self.min_s, self.max_s, self.cap_s = delay_settings(crawler.settings)
        # --no-politeness (all delays zero) also ignores robots.txt Crawl-delay
        self.polite = self.factor > 0 or self.min_s > 0 or self.max_s > 0
        self.robots_agent = crawler.settings.get("ROBOTSTXT_USER_AGENT")
        crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self.robots_parsed, signal=signals.robots_parsed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Politeness:
        return cls(crawler)

    def robots_parsed(self, robotparser: Any, request: Request, **_: Any) -> None:
        host = urlparse_cached(request).hostname or ""
        delay = None
        parser = getattr(robotparser, "rp", None)
        if parser is not None and hasattr(parser, "crawl_delay"):
            delay = parser.crawl_delay(self.robots_agent)
        if delay is not None:
            self.ctx.crawl_delays[host] = float(delay)
            log.info("robots.txt of %s asks for Crawl-delay %s s", host, delay)
            # robots.txt is parsed after its own fetch set the slot's delay: raise it now,
            # before the request that waited for robots.txt reaches the slot
            engine = self.crawler.engine
            slot = engine.downloader.slots.get(host) if engine is not None else None
            if slot is not None and self.polite:
                slot.delay = max(slot.delay, min(float(delay), self.cap_s))

    def response_downloaded(self, response: Response, request: Request, spider: Any) -> None:
        engine = self.crawler.engine
        if engine is None or not self.polite:
            return
        downloader = engine.downloader
        key = request.meta.get("download_slot")
        slot = downloader.slots.get(key) if key is not None else None
        if slot is None:
            return
        start = request.meta.get("hf_fetch_start")
        duration = max(0.0, time.time() - start) if start else 0.0
        host = urlparse_cached(request).hostname or ""
        slot.delay = politeness_delay(
            duration,
            self.factor,
            self.min_s,
            self.max_s,
            self.ctx.crawl_delays.get(host),
            self.cap_s,
        )
        # the next fetch waits `delay` after the end of this one, not after its start
        slot.lastseen = time.monotonic()


class ArchivalRobotsTxtMiddleware(RobotsTxtMiddleware):
    """Scrapy's robots.txt middleware (with protego), refusing with crawl.log's -9998."""

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        super().__init__(crawler)
        # the agent the parent matches rules with (its own copies are private attributes)
        self.rules_agent = crawler.settings.get("ROBOTSTXT_USER_AGENT") or crawler.settings.get(
            "USER_AGENT"
        )
        self.crawler_stats = crawler.stats

    async def robot_parser(self, request: Request) -> Any:
        """The host's parser, read back from ``_parsers`` once robots.txt is in.

        Scrapy hands every request waiting for the same robots.txt one Deferred; the first
        waiter's callback returns None into the Deferred's chain, so every later waiter would
        get None ("no robots.txt": everything allowed) — seeds queued together on a host then
        ignored its robots.txt. The dict holds the parser (or None after a fetch error) before
        the Deferred fires, so it is the authoritative answer.
        """
        parser = await super().robot_parser(request)
        current = robots_parser_of(self, urlparse_cached(request).netloc, parser)
        return parser if isinstance(current, Deferred) else current

    def process_request_2(self, rp: Any, request: Request) -> None:
        if rp is None:
            return
        if not rp.allowed(request.url, self.rules_agent):
            self.crawler_stats.inc_value("robotstxt/forbidden")
            raise RobotsExcluded()
