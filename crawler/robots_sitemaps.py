"""The crawl extension that queues the ``Sitemap:`` lines of every robots.txt parsed.

Why its own module: it needs the job's context (to queue links through the frontier), and the
context imports :mod:`crawler.sitemaps` for the seed sitemaps; the parsing rules stay there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.context import CrawlContext, context_of
from crawler.sitemaps import HOP, ROBOTS_CONTEXT, robots_url
from harvestflow.formats.urls import host_of

if TYPE_CHECKING:
    import scrapy
    from scrapy.crawler import Crawler


class RobotsSitemaps:
    """Extension: the ``Sitemap:`` lines of each robots.txt the robots middleware parsed are
    queued (hop ``M`` after the robots.txt prerequisite ``P``, robots.txt as ``via``).

    Off (NotConfigured) unless the template extracts sitemaps and obeys robots.txt (a crawl
    that ignores robots.txt does not fetch it: only ``/sitemap.xml`` of its seed hosts is read).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        if not (
            settings.getbool("HARVESTFLOW_EXTRACT_SITEMAPS") and settings.getbool("ROBOTSTXT_OBEY")
        ):
            raise NotConfigured
        self.ctx: CrawlContext = context_of(crawler)
        # the source tag of a host's sitemaps: its first seed (none for a host without seeds)
        self.seed_of_host: dict[str, str] = {}
        for seed in reversed(self.ctx.spec.seeds):
            self.seed_of_host[host_of(seed)] = seed
        crawler.signals.connect(self.robots_parsed, signal=signals.robots_parsed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsSitemaps:
        return cls(crawler)

    def robots_parsed(self, robotparser: Any, request: scrapy.Request, **_: Any) -> None:
        parser = getattr(robotparser, "rp", None)
        found = list(getattr(parser, "sitemaps", []) or [])
        if not found:
            return
        robots = robots_url(request.url)
        seed = self.seed_of_host.get(host_of(request.url))
        links = [(urljoin(robots, u.strip()), HOP, ROBOTS_CONTEXT) for u in found if u.strip()]
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value("sitemaps/robots_lines", len(links))
        parent = {"hops": "P", "url": robots, "seed": seed}
        engine = self.crawler.engine
        for req in self.ctx.frontier.discovered(links, parent):
            if engine is not None:
                engine.crawl(req)
