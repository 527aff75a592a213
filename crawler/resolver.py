"""Name resolution: ``--resolve`` overrides and the private-address safety rule.

Why in the resolver: every connection Scrapy opens asks it first, so this is the one place where
(a) a host name can be mapped to an address without DNS (the sample site, a test server, a
site moved to a known IP) and (b) an address behind a curator-entered name can be refused when
it is loopback, private, link-local or a cloud metadata endpoint — a seed list must not become a
way into internal services. Explicit overrides are trusted (the operator typed them); a
template may allow private addresses for tests and demos.

With ``[crawler] nameservers`` set (``host[:port]`` as the preload's), names are asked to those
servers (dnspython, A records, in Twisted's thread pool, cached like Scrapy's) instead of the
system's resolver: a crawl-dedicated resolver, as Heritrix's own DNS fetches, and the same
servers the preload checked the domains with.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from scrapy.crawler import Crawler
from scrapy.resolver import CachingThreadedResolver, dnscache
from twisted.internet import defer, threads
from twisted.internet.error import DNSLookupError

from crawler import CrawlerError
from crawler.context import CrawlContext, context_of
from harvestflow.addresses import address_allowed
from harvestflow.nameservers import parse_nameserver

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
        resolver.dns = _dns_client(crawler.settings.getfloat("DNS_TIMEOUT", 20.0))
        return resolver

    overrides: dict[str, str]
    allow_private: bool
    dns: Any  # a dns.resolver.Resolver on [crawler] nameservers, or None (the system's)

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:
        fixed = self.overrides.get(name.lower())
        if fixed is not None:
            return defer.succeed(fixed)
        if self.dns is None:
            d = super().getHostByName(name, timeout)
        elif name in dnscache:
            d = defer.succeed(dnscache[name])
        else:
            d = threads.deferToThread(self._ask, name)
        d.addCallback(self._check, name)
        return d

    def _ask(self, name: str) -> str:
        """The first A record of ``name`` from the configured nameservers (cached)."""
        import dns.exception
        import dns.resolver

        try:
            address = str(self.dns.resolve(name, "A", search=False)[0])
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer) as exc:
            raise DNSLookupError(f"{name}: no address ({type(exc).__name__})") from exc
        except dns.exception.DNSException as exc:
            raise DNSLookupError(f"{name}: {type(exc).__name__}: {exc}") from exc
        dnscache[name] = address
        return address

    def _check(self, address: str, name: str) -> str:
        if self.allow_private or address_allowed(address):
            if name.lower() != address:  # a literal address is no DNS answer
                self.ctx.records.record_dns(name, address)
            return address
        self.ctx.refused_hosts[name.lower()] = address
        log.warning("refusing %s: it resolves to the non-public address %s", name, address)
        raise DNSLookupError(f"{name} resolves to non-public address {address} (refused)")


def _dns_client(timeout_s: float) -> Any:
    """A resolver on ``[crawler] nameservers``, or None when none is set (the system's)."""
    from harvestflow.settings import get_settings

    raw = get_settings()["crawler"].get("nameservers") or []
    if not raw:
        return None
    import dns.nameserver
    import dns.resolver

    try:
        servers = [parse_nameserver(str(text)) for text in raw]
    except ValueError as exc:
        raise CrawlerError(f"[crawler] nameservers: {exc}") from exc
    client = dns.resolver.Resolver(configure=False)
    client.nameservers = [dns.nameserver.Do53Nameserver(host, port) for host, port in servers]
    client.lifetime = timeout_s
    client.timeout = min(timeout_s, 2.0)
    return client
