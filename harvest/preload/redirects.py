"""Redirect discovery: probe each active domain's seeds once, without following redirects.

Why: many French sites live on other TLDs (.com, .org, .eu) and are only found because a .fr
name redirects to them. For each active domain we ask its two seeds (``http://D/`` and
``http://www.D/``) plus the specific URLs its sources gave, one request each, redirects not
followed; a 301/302/303/307/308 whose Location is on another registrable domain adds that
domain to the run (origin ``redirect``), and the new domains are DNS-checked in turn.

Politeness: one worker takes one domain at a time and asks its URLs one after the other with a
pause between them, so a host never sees two probes at once; ``http_concurrency`` workers run
together. Results are UPSERTed into ``redirect_checks`` every few hundred, so a re-run skips
what is already probed.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import aiohttp
import sqlalchemy as sa
from aiohttp.abc import AbstractResolver, ResolveResult
from sqlalchemy.engine import Engine

from harvest.preload.dnscheck import dns_settings, read_domain_lines
from harvest.preload.dnstask import check_and_store
from harvest.preload.dnswire import parse_nameserver, read_hosts_file
from harvest.preload.normalise import RejectedDomain, domain_of_url
from harvest.preload.store import copy_upsert, engine_for, preload_settings
from harvestflow.pinned_resolver import PinnedResolver
from harvestflow.progress import Progress
from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ProbeRow = tuple[str, int | None, str | None, str | None]


class _StaticResolver(PinnedResolver):
    """Resolves from a hosts map and/or sends every connection to one ``host:port``; the other
    names go to the run's nameservers when it has some (else to the system's resolver).

    ``connect_to`` works like curl's ``--connect-to``: the URL (and Host header) stay as they
    are, the TCP connection goes to the given address; the demo points it at the sample site.
    Why the run's nameservers: the domains were DNS-checked there; asking the system instead
    probed other answers than the checked ones (or none: each probe then waited out the system
    resolver's time-outs, ~5 probes a second for a whole preload).
    """

    def __init__(
        self,
        hosts: dict[str, str],
        connect_to: tuple[str, int] | None,
        nameservers: list[tuple[str, int]] | None = None,
        timeout_s: float = 2.0,
    ) -> None:
        super().__init__()
        self.hosts = hosts
        self.connect_to = connect_to
        self.dns: Any = None
        if nameservers:
            import dns.asyncresolver
            import dns.nameserver

            self.dns = dns.asyncresolver.Resolver(configure=False)
            self.dns.nameservers = [dns.nameserver.Do53Nameserver(h, p) for h, p in nameservers]
            self.dns.timeout = timeout_s
            self.dns.lifetime = 2 * timeout_s

    def pinned(self, host: str, port: int) -> tuple[str, int] | None:
        if self.connect_to is not None:
            return self.connect_to
        address = self.hosts.get(host.lower().rstrip("."))
        return None if address is None else (address, port)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if self.dns is None or self.pinned(host, port) is not None:
            return await super().resolve(host, port, family)
        import dns.exception

        try:
            answer = await self.dns.resolve(host, "A", search=False)
        except dns.exception.DNSException as exc:  # the probe records no status
            raise OSError(f"{host}: {type(exc).__name__}: {exc}") from exc
        return [
            {
                "hostname": host,
                "host": str(record),
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for record in answer
        ]


def seeds_to_probe(domain: str, specific: list[str]) -> list[str]:
    """The two seeds of a domain (with and without www) then its specific URLs."""
    return list(dict.fromkeys([f"http://{domain}/", f"http://www.{domain}/", *specific]))


def target_of(
    url: str, status: int | None, location: str | None, extra: frozenset[str]
) -> str | None:
    """The registrable domain a redirect points to, when it is another one."""
    if status not in REDIRECT_STATUSES or not location:
        return None
    try:
        source = domain_of_url(url, extra).domain
        target = domain_of_url(urljoin(url, location), extra).domain
    except (RejectedDomain, ValueError):  # urljoin refuses some broken Locations
        return None
    return target if target != source else None


async def _probe_all(
    work: list[tuple[str, list[str]]],
    conf: dict[str, Any],
    resolver: AbstractResolver,
    user_agent: str,
    on_row: Any,
    progress: Progress,
) -> None:
    concurrency = max(1, int(conf["http_concurrency"]))
    delay = float(conf["http_per_host_delay_s"])
    timeout = aiohttp.ClientTimeout(total=float(conf["http_timeout_s"]))
    queue: asyncio.Queue[tuple[str, list[str]]] = asyncio.Queue()
    for item in work:
        queue.put_nowait(item)
    connector = aiohttp.TCPConnector(
        limit=concurrency, resolver=resolver, ssl=False, force_close=True
    )
    headers = {"User-Agent": user_agent}
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, headers=headers, auto_decompress=False
    ) as session:

        async def worker() -> None:
            while True:
                try:
                    _domain, urls = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                for index, url in enumerate(urls):
                    if index:
                        await asyncio.sleep(delay)
                    try:
                        async with session.get(url, allow_redirects=False) as response:
                            on_row((url, response.status, response.headers.get("Location")))
                    except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                        log.debug("probe %s: %s", url, exc)
                        on_row((url, None, None))
                    progress.advance()

        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(work)) or 1)))


def probe_redirects(
    run_id: str,
    chunk_path: str | None = None,
    settings: Settings | None = None,
    engine: Engine | None = None,
    connect_to: str | None = None,
    hosts_file: str | None = None,
    nameservers: list[str] | None = None,
    static_only: bool | None = None,
) -> dict[str, Any]:
    """Probe the active domains of a run (or of one chunk file) for cross-domain redirects.

    Domains known only through a redirect are not probed themselves (one level, so a re-run
    finds nothing new to do). Stores every probe in ``redirect_checks``, adds discovered domains to ``domain_origins``
    with origin ``redirect`` and DNS-checks those not checked yet. ``connect_to``
    (``host:port``, or ``[preload] connect_to``) sends every probe to one server (demo).
    """
    settings = settings or get_settings()
    conf = preload_settings(settings)
    engine = engine_for(engine, settings)
    extra = frozenset(str(s).lower() for s in conf["extra_suffixes"])
    connect = connect_to if connect_to is not None else conf["connect_to"]
    hosts_path = hosts_file if hosts_file is not None else conf["hosts_file"]
    resolver_hosts = read_hosts_file(hosts_path) if hosts_path else {}
    started = time.monotonic()

    # one chunk's domains at a time: a task's memory stays bounded whatever the run's size
    chunk_filter = ""
    query_params: dict[str, Any] = {"r": run_id}
    if chunk_path is not None:
        chunk_filter = " AND c.domain = ANY(:chunk)"
        query_params["chunk"] = list(read_domain_lines(Path(chunk_path)))
    with engine.connect() as conn:
        active = list(
            conn.execute(
                sa.text(
                    "SELECT c.domain FROM dns_checks c WHERE c.run_id = :r AND c.class = 'active'"
                    + chunk_filter
                    + " AND EXISTS (SELECT 1 FROM domain_origins o WHERE o.run_id = c.run_id"
                    " AND o.domain = c.domain AND o.origin <> 'redirect') ORDER BY c.domain"
                ),
                query_params,
            ).scalars()
        )
        specific: dict[str, list[str]] = defaultdict(list)
        for domain, url in conn.execute(
            sa.text(
                "SELECT domain, url FROM preload_seeds WHERE run_id = :r AND domain = ANY(:d)"
                " ORDER BY domain, url"
            ),
            {"r": run_id, "d": active},
        ):
            specific[domain].append(url)
        candidates = {d: seeds_to_probe(d, specific.get(d, [])) for d in active}
        done = set(
            conn.execute(
                sa.text("SELECT url FROM redirect_checks WHERE run_id = :r AND url = ANY(:u)"),
                {"r": run_id, "u": [u for urls in candidates.values() for u in urls]},
            ).scalars()
        )
    work = []
    for domain, all_urls in candidates.items():
        urls = [u for u in all_urls if u not in done]
        if urls:
            work.append((domain, urls))
    total = sum(len(urls) for _, urls in work)

    rows: list[ProbeRow] = []
    targets: set[str] = set()
    counts = {"probed": 0, "errors": 0, "redirects": 0, "cross_domain": 0}

    def flush() -> None:
        if not rows:
            return
        with engine.begin() as conn:
            copy_upsert(
                conn,
                "redirect_checks",
                ("run_id", "url", "status", "location", "target_domain", "checked_at"),
                ((run_id, u, s, loc, t, "now") for u, s, loc, t in rows),
                conflict="(run_id, url) DO UPDATE SET status = EXCLUDED.status,"
                " location = EXCLUDED.location, target_domain = EXCLUDED.target_domain,"
                " checked_at = EXCLUDED.checked_at",
                key=("run_id", "url"),
            )
        rows.clear()

    def on_row(row: tuple[str, int | None, str | None]) -> None:
        url, status, location = row
        target = target_of(url, status, location, extra)
        counts["probed"] += 1
        counts["errors"] += status is None
        counts["redirects"] += status in REDIRECT_STATUSES
        if target:
            counts["cross_domain"] += 1
            targets.add(target)
        rows.append((url, status, location, target))
        if len(rows) >= 500:
            flush()

    user_agent = str(settings.get("crawler", "user_agent", "harvestflow"))
    resolver_target = parse_nameserver(connect, default_port=80) if connect else None

    servers = nameservers if nameservers is not None else conf["nameservers"]
    parsed = [parse_nameserver(str(text)) for text in servers or []]

    async def run() -> None:
        resolver = _StaticResolver(
            resolver_hosts, resolver_target, parsed, float(conf["dns_timeout_s"])
        )
        await _probe_all(work, conf, resolver, user_agent, on_row, progress)

    with Progress(f"redirect probes {run_id}", total, unit="urls") as progress:
        asyncio.run(run())
    flush()

    discovered = _record_targets(engine, run_id)
    dns_result: dict[str, Any] = {}
    if discovered:
        dns = dns_settings(settings, nameservers, hosts_file, static_only)
        dns_result = check_and_store(engine, run_id, discovered, dns, label="dns check redirects")
    result = {
        "run_id": run_id,
        "chunk": chunk_path,
        "domains": len(active),
        **counts,
        "targets": len(targets),
        "new_domains": len(discovered),
        "new_domains_dns": dns_result,
        "seconds": round(time.monotonic() - started, 1),
    }
    log.info("preload %s redirects: %s", run_id, result)
    return result


def _record_targets(engine: Engine, run_id: str) -> list[str]:
    """Add every redirect target of the run as origin 'redirect'; those not DNS-checked yet."""
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO domain_origins (domain, origin, run_id)"
                " SELECT DISTINCT target_domain, 'redirect', run_id FROM redirect_checks"
                " WHERE run_id = :r AND target_domain IS NOT NULL ON CONFLICT DO NOTHING"
            ),
            {"r": run_id},
        )
        return list(
            conn.execute(
                sa.text(
                    "SELECT DISTINCT o.domain FROM domain_origins o LEFT JOIN dns_checks c"
                    " ON c.run_id = o.run_id AND c.domain = o.domain"
                    " WHERE o.run_id = :r AND o.origin = 'redirect' AND c.domain IS NULL"
                    " ORDER BY o.domain"
                ),
                {"r": run_id},
            ).scalars()
        )
