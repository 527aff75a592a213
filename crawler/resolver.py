"""Name resolution: ``--resolve`` overrides and the private-address safety rule.

Why in the resolver: every connection Scrapy opens asks it first, so this is the one place where
(a) a host name can be mapped to an address without DNS (the sample site, a test server, a
site moved to a known IP) and (b) an address behind a curator-entered name can be refused when
it is loopback, private, link-local or a cloud metadata endpoint — a seed list must not become a
way into internal services. Explicit overrides are trusted (the operator typed them); a
template may allow private addresses for tests and demos.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from scrapy.crawler import Crawler
from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

from crawler.context import CrawlContext, context_of
from harvestflow.addresses import address_allowed

log = logging.getLogger(__name__)


class ArchivalResolver(CachingThreadedResolver):
    """Scrapy's caching resolver plus overrides and the safety rule."""

    ctx: CrawlContext

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: Any) -> ArchivalResolver:
        resolver = super().from_crawler(crawler, reactor)
        # Scrapy builds the reactor's one resolver with the CrawlerProcess, not a Crawler (its
        # settings are the crawl's); a crawler process crawls one job: its crawler's context
        crawlers = getattr(crawler, "crawlers", None)
        (job_crawler,) = crawlers if crawlers is not None else (crawler,)
        resolver.ctx = context_of(job_crawler)
        overrides = crawler.settings.getdict("HARVESTFLOW_RESOLVE")
        resolver.overrides = {k.lower(): v for k, v in overrides.items()}
        resolver.allow_private = crawler.settings.getbool("HARVESTFLOW_ALLOW_PRIVATE_ADDRESSES")
        return resolver

    overrides: dict[str, str]
    allow_private: bool

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:
        fixed = self.overrides.get(name.lower())
        if fixed is not None:
            return defer.succeed(fixed)
        d = super().getHostByName(name, timeout)
        d.addCallback(self._check, name)
        return d

    def _check(self, address: str, name: str) -> str:
        if self.allow_private or address_allowed(address):
            if name.lower() != address:  # a literal address is no DNS answer
                self.ctx.records.record_dns(name, address)
            return address
        self.ctx.refused_hosts[name.lower()] = address
        log.warning("refusing %s: it resolves to the non-public address %s", name, address)
        raise DNSLookupError(f"{name} resolves to non-public address {address} (refused)")
