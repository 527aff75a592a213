"""The frontier's decisions on a URL: scope, the seen-set, budgets, and which partition owns it.

Why one home: seeds, a page's links, robots.txt's sitemaps, other partitions' hand-offs and a
rendering page's requests are all decided the same way, inside the caller's transaction of the
persisted frontier (:mod:`crawler.state`), so that a crash never loses or repeats a decision.
A refusal is logged in crawl.log as it is decided.

At most the template's ``max_queued_requests`` accepted URLs wait in memory as Scrapy requests
(~1 KB each, with their meta); past it an accepted URL waits in the persisted frontier only
("parked": it is there anyway) and is made a request, in discovery order, when the queue has
drained to half (:meth:`Frontier.refill`, called by crawler.frontier_refill). A broad crawl's
memory then no longer grows with the URLs it has found and not yet fetched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import scrapy

from crawler import sitemaps
from crawler import state as st
from crawler.budget import Budgets
from crawler.crawllog_writer import CrawlLog, LogEntry
from crawler.jobspec import JobSpec
from crawler.partitioning.handoff import Outbox, Partition, owner_of, seed_assignment
from crawler.request_builder import RequestBuilder
from crawler.scope import Scope
from harvestflow.formats.fetch_status import FetchStatus
from harvestflow.formats.urls import canonical_key, host_of, without_fragment

log = logging.getLogger(__name__)


class Frontier:
    """Decides on the job's URLs and queues the accepted ones as requests."""

    def __init__(
        self,
        spec: JobSpec,
        state: st.CrawlState,
        crawl_log: CrawlLog,
        requests: RequestBuilder,
        partition: Partition | None = None,
    ) -> None:
        self.spec = spec
        self.state = state
        self.crawl_log = crawl_log
        self.requests = requests
        self.partition = partition
        self.outbox = Outbox(partition) if partition is not None else None
        self.scope = Scope(spec)
        self.budgets = Budgets(spec, state.domain_totals())
        # where each seed's host (or limited domain) is crawled when the job is partitioned
        self.pinned = (
            seed_assignment(spec.seeds, self.budgets, partition.count) if partition else {}
        )
        for domain, bstate in self.budgets.domains.items():
            saved = state.get_meta(f"stop:{domain}")
            if saved is not None:
                bstate.stop_reason = int(saved)
        for url, _ in state.seeds():
            self.scope.add_seed(url)
        self.max_queued = spec.template.max_queued_requests
        # requests waiting in Scrapy's scheduler (set by the spider once the engine has one)
        self.queued_in_memory: Callable[[], int] = lambda: 0
        self._made = 0  # requests made by the decisions under way, not yet scheduled
        # rowid of the first parked URL (None: nothing parked); a browser's request made while
        # URLs are parked is in memory with a larger rowid: kept out of the refill by its key
        self.parked_from: int | None = None
        self._urgent: set[str] = set()

    def commit(self) -> None:
        """End the caller's transaction: this transaction's hand-offs are sent first."""
        if self.outbox is not None:
            self.outbox.flush()
        self.state.commit()

    @property
    def resuming(self) -> bool:
        """This run continues a job whose frontier was saved (and seeded) by an earlier run."""
        return self.state.resumed and bool(self.state.seeds())

    def start(self) -> list[scrapy.Request]:
        """Seeds decided on a fresh start; then the persisted frontier's pending URLs."""
        if not self.resuming:
            self.state.begin()
            for seed in self.spec.seeds:
                self._seed(seed)
            self.commit()
        else:
            log.info("resuming job %s from %s", self.spec.job_id, self.state.path)
        self._made = 0
        self._urgent.clear()
        self.parked_from = 0  # the whole persisted frontier waits on disk: read its first part
        return self._unpark(self.max_queued)

    @property
    def parked(self) -> bool:
        """Accepted URLs wait in the persisted frontier only."""
        return self.parked_from is not None

    def refill(self) -> list[scrapy.Request]:
        """The requests of parked URLs, in discovery order, once the scheduler's queue has
        drained to half of ``max_queued_requests`` (or is empty): [] otherwise."""
        if self.parked_from is None:
            return []
        room = self.max_queued - self.queued_in_memory()
        if room < (self.max_queued + 1) // 2:
            return []
        return self._unpark(room)

    def _unpark(self, room: int) -> list[scrapy.Request]:
        assert self.parked_from is not None
        out: list[scrapy.Request] = []
        rows = self.state.pending_from(self.parked_from, room + len(self._urgent))
        for rowid, p in rows:
            self.parked_from = rowid + 1
            if p.key in self._urgent:
                continue
            req = self.requests.make(p.url, p.key, p.hops, p.via, p.seed, p.context)
            if req is not None:
                out.append(req)
                if len(out) == room:
                    break
        else:
            if len(rows) < room + len(self._urgent):  # read to the end: nothing parked now
                self.parked_from = None
                self._urgent.clear()
        return out

    def _seed(self, seed: str) -> None:
        self.state.add_seed(seed)
        if not self.owns(seed):
            return  # another partition's seed: its owner queues it
        key = canonical_key(seed)
        decision = self.scope.decide(seed, "")
        if not decision.accepted:  # a bad seed is logged, never fatal
            refused = st.FrontierState.REFUSED
            domain = self.domain_of(seed)
            self.state.add(key, seed, "", None, seed, "seed", domain, refused, decision.status)
            self.crawl_log.write(
                LogEntry(decision.status, seed, "", None, seed=seed, annotations=[decision.reason])
            )
            return
        self.state.add(key, seed, "", None, seed, "seed", self.domain_of(seed))
        if self.spec.template.extract_sitemaps:
            # queued like discovered links (scope, traps, budget); listed by pending()
            parent = {"hops": "", "url": seed, "seed": seed}
            for url, hop, context in sitemaps.seed_links(seed):
                self.consider(url, hop, context, parent)

    def owner(self, url: str) -> int:
        """The index of the partition that owns ``url`` (0 when the job is not partitioned)."""
        p = self.partition
        return 0 if p is None else owner_of(url, self.budgets, p.count, self.pinned)

    def owns(self, url: str) -> bool:
        """Whether this process crawls ``url`` (always, unless the job is partitioned)."""
        p = self.partition
        return p is None or owner_of(url, self.budgets, p.count, self.pinned) == p.index

    def intake(self, entries: list[list[Any]], offset: int) -> list[scrapy.Request]:
        """URLs handed off by other partitions: decided like discovered links, with the inbox
        offset saved in the same transaction (a crash re-reads them; the seen-set drops them)."""
        new: list[scrapy.Request] = []
        self._made = 0
        self.state.begin()
        for url, hop, context, parent_hops, via, seed in entries:
            parent = {"hops": parent_hops, "url": via, "seed": seed}
            req = self.consider(url, hop, context, parent)
            if req is not None:
                new.append(req)
        self.state.set_meta("inbox_offset", str(offset))
        self.commit()
        return new

    def discovered(
        self, links: list[tuple[str, str, str]], parent: dict[str, Any]
    ) -> list[scrapy.Request]:
        """Links found outside a spider callback (robots.txt's Sitemap: lines), decided in one
        transaction like a page's links."""
        self.state.begin()
        new = self.consider_all(links, parent)
        self.commit()
        return new

    def consider_all(
        self, links: list[tuple[str, str, str]], parent: dict[str, Any]
    ) -> list[scrapy.Request]:
        """A page's links decided in the caller's transaction: the requests of those accepted
        (the others parked past ``max_queued_requests``)."""
        new: list[scrapy.Request] = []
        self._made = 0
        for url, hop, context in links:
            req = self.consider(url, hop, context, parent)
            if req is not None:
                new.append(req)
        return new

    def domain_of(self, url: str) -> str:
        return self.budgets.domain_for(host_of(url))

    def consider(
        self, url: str, hop: str, context: str, parent: dict[str, Any], tag: str | None = None
    ) -> scrapy.Request | None:
        """Decide on a discovered link (inside the caller's transaction); ``tag`` is added to
        the annotations of a refusal's crawl.log line (``browser`` for a rendering page's).
        A tagged request is one a page waits for: it is never parked."""
        url = without_fragment(url)  # what the server is asked for, and the capture's name
        try:
            key = canonical_key(url)
        except ValueError:
            key = url
        if key in self.state.seen:
            return None
        hops = parent["hops"] + hop
        via, seed = parent.get("url"), parent.get("seed")
        if self.outbox is not None and not self.owns(url):
            # another partition's URL: remembered as handed off (never sent twice), and sent
            # with the page's other hand-offs before this transaction commits
            self.state.add(key, url, hops, via, seed, context, "", st.FrontierState.HANDED_OFF)
            self.outbox.add(
                owner_of(url, self.budgets, self.outbox.partition.count, self.pinned),
                url,
                hop,
                context,
                parent,
            )
            return None
        domain = self.domain_of(url)
        decision = self.scope.decide(url, hops)
        if decision.accepted:
            quota = self.budgets.blocked(domain)
            if quota:
                self.save_stop(domain)
                decision = type(decision)(False, FetchStatus.BLOCKED_BY_QUOTA, quota)
        if not decision.accepted:
            refused = st.FrontierState.REFUSED
            self.state.add(key, url, hops, via, seed, context, domain, refused, decision.status)
            annotations = [decision.reason, tag] if tag else [decision.reason]
            self.crawl_log.write(
                LogEntry(decision.status, url, hops, via, seed=seed, annotations=annotations)
            )
            return None
        self.state.add(key, url, hops, via, seed, context, domain)
        if hop == "R" and parent["hops"].strip("R") == "" and len(hops) <= 5:
            # a seed that redirects makes its target a seed (Heritrix: within 5 hops)
            self.scope.add_seed(url)
            self.state.add_seed(url, parent.get("url"))
        if tag is None:
            if self.parked_from is None:
                if self.queued_in_memory() + self._made < self.max_queued:
                    self._made += 1
                    return self.requests.make(url, key, hops, via, seed, context)
                self.parked_from = self.state.rowid_of(key)
            return None  # parked: in the persisted frontier, made a request by refill()
        if self.parked_from is not None:
            self._urgent.add(key)
        return self.requests.make(url, key, hops, via, seed, context)

    def save_stop(self, domain: str) -> None:
        """Persist the domain's stop reason (a resumed run keeps its budget's verdict)."""
        reason = self.budgets.domains[domain].stop_reason
        if reason is not None:
            self.state.set_meta(f"stop:{domain}", str(reason))
