"""The state of one running job shared by the crawl's Scrapy components.

Why one object: the spider, the capture middleware, the robots and budget middlewares and the
progress extension all need the same job spec, WARC writer, crawl.log, persistent frontier and
budgets. It is built once by the runner and hung off the Scrapy crawler by :func:`attach`
(the one place that does); each component takes it with :func:`context_of` in
``from_crawler``, and reads the template's values from ``crawler.settings`` (see
``crawler.runner.scrapy_settings``). Its counters are Scrapy stats (``crawler.stats``, keys
``harvestflow/…``). The discovery → decision → request and fetch → log → persist steps live
here so that their order (which matters for resuming after a crash) is written down in one
place.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import scrapy

from crawler import sitemaps
from crawler import state as st
from crawler.budget import Budgets
from crawler.crawllog_writer import CrawlLog, LogEntry
from crawler.dedup_lookup import EarlierCapture, by_digest, load_index
from crawler.jobspec import JobSpec
from crawler.partitioning.handoff import Outbox, Partition, owner_of, seed_assignment
from crawler.scope import Scope
from crawler.state import BROWSER_PRIORITY
from crawler.warc.files import OPEN_SUFFIX, repair_open_file
from crawler.warc.job_writer import job_warc_writer
from crawler.warc.records import dns_record, metadata_record, page_fields, warc_date
from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.cdx import CdxEntry, cdx11_line
from harvestflow.formats.fetch_status import FetchStatus
from harvestflow.formats.urls import canonical_key, host_of, without_fragment

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

# the crawler attribute the job's context hangs off (set by attach(), read by context_of())
CRAWLER_ATTRIBUTE = "harvestflow_context"

# the context's counters in crawler.stats
URLS_DONE = "harvestflow/urls_done"
BYTES_DONE = "harvestflow/bytes_done"
FAILURES = "harvestflow/failures"


@dataclass
class Capture:
    """What the capture middleware learnt about one fetch (kept in request.meta)."""

    status: int
    size: int
    digest: str
    mime: str
    record_id: str
    date: str
    fetch_start: dt.datetime
    duration_ms: int
    counted: bool
    annotations: list[str] = field(default_factory=list)
    location: str | None = None
    revisit: bool = False


class CrawlContext:
    """Everything one job's crawl shares; see the module docstring."""

    def __init__(
        self,
        spec: JobSpec,
        out_dir: Path,
        partition: Partition | None = None,
    ) -> None:
        self.spec = spec
        self.partition = partition
        self.outbox = Outbox(partition) if partition is not None else None
        self.out = Path(out_dir)
        self.jobdir = JobDir(self.out)
        self.warc_dir = self.jobdir.warcs
        self.log_dir = self.jobdir.logs
        self.report_dir = self.jobdir.reports
        self.state_dir = self.jobdir.state
        for d in (self.warc_dir, self.log_dir, self.report_dir, self.state_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.repaired = [repair_open_file(p)[0].name for p in self.warc_dir.glob("*" + OPEN_SUFFIX)]
        self.state = st.CrawlState(self.jobdir.crawl_state)
        self.crawl_log = CrawlLog(self.jobdir.crawl_log)
        self.scope = Scope(spec)
        self.budgets = Budgets(spec, self.state.domain_totals())
        # where each seed's host (or limited domain) is crawled when the job is partitioned
        self.pinned = (
            seed_assignment(spec.seeds, self.budgets, partition.count) if partition else {}
        )
        for domain, bstate in self.budgets.domains.items():
            saved = self.state.get_meta(f"stop:{domain}")
            if saved is not None:
                bstate.stop_reason = int(saved)
        for url, _ in self.state.seeds():
            self.scope.add_seed(url)
        self.dedup: dict[str, EarlierCapture] = (
            load_index(Path(spec.dedup_index)) if spec.dedup_index else {}
        )
        self.dedup_digests: dict[str, EarlierCapture] = by_digest(self.dedup)
        self.writer = job_warc_writer(spec, self.warc_dir, partition.index if partition else None)
        # CDX lines of the data WARCs, written as records are (no re-reading at the end)
        self.cdx_path = self.jobdir.recorded_cdx
        self._cdx = self.cdx_path.open("a", encoding="utf-8", buffering=1)
        self.refused_hosts: dict[str, str] = {}  # host → address refused by the safety rule
        self.crawl_delays: dict[str, float] = {}  # host → robots.txt Crawl-delay (s)
        self.dns_recorded: set[str] = set()  # hosts whose dns: record is written
        self.started = time.time()
        self.started_dt = dt.datetime.now(dt.UTC)
        # a resumed job: what its earlier runs fetched (the progress line counts it) and when
        # each run started (summary.json: ``started`` the first run's, ``resumed`` the others)
        self.urls_done_before = self.state.counts().get(st.FrontierState.DONE, 0)
        self.runs = [*json.loads(self.state.get_meta("runs") or "[]"), self.started_dt.isoformat()]
        self.state.set_meta("runs", json.dumps(self.runs))
        self.crawler: Crawler | None = None  # set by attach()
        # crawler.control_gates.Controls of a job with operator control (made by controls_of)
        self.controls: Any = None
        self.end_reason = "unfinished"
        self.start_done = False  # start_requests() has listed the frontier
        self.renderer: Any = None  # crawler.rendering.renderer.Renderer of a job that renders pages
        # keys a rendering page's browser fetched while they were queued: the queued request
        # is dropped when its turn comes (one capture per URL per job)
        self.browser_claimed: set[str] = set()
        self.fetch_started: set[str] = set()  # keys whose plain fetch began (rendering jobs)

    def count(self, key: str, n: int = 1) -> None:
        """Add ``n`` to the crawl's counter ``key`` in ``crawler.stats``."""
        assert self.crawler is not None, "count() before attach()"
        self.crawler.stats.inc_value(key, n)

    # --- requests -----------------------------------------------------------------------------
    def make_request(
        self, url: str, key: str, hops: str, via: str | None, seed: str | None, context: str | None
    ) -> scrapy.Request | None:
        spider_cb = self.spider_callbacks
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
                callback=spider_cb[0],
                errback=spider_cb[1],
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

    spider_callbacks: tuple[Any, Any] = (None, None)

    @property
    def resuming(self) -> bool:
        """This run continues a job whose frontier was saved (and seeded) by an earlier run."""
        return self.state.resumed and bool(self.state.seeds())

    def start_requests(self) -> list[scrapy.Request]:
        """Seeds on a fresh start; the persisted frontier on a resumed one."""
        if not self.resuming:
            self.state.begin()
            for seed in self.spec.seeds:
                self.state.add_seed(seed)
                if not self.owns(seed):
                    continue  # another partition's seed: its owner queues it
                key = canonical_key(seed)
                decision = self.scope.decide(seed, "")
                if not decision.accepted:  # a bad seed is logged, never fatal
                    self.state.add(
                        key,
                        seed,
                        "",
                        None,
                        seed,
                        "seed",
                        self._domain(seed),
                        st.FrontierState.REFUSED,
                        decision.status,
                    )
                    self.crawl_log.write(
                        LogEntry(
                            decision.status,
                            seed,
                            "",
                            None,
                            seed=seed,
                            annotations=[decision.reason],
                        )
                    )
                    continue
                self.state.add(key, seed, "", None, seed, "seed", self._domain(seed))
                if self.spec.template.extract_sitemaps:
                    # queued like discovered links (scope, traps, budget); listed by pending()
                    parent = {"hops": "", "url": seed, "seed": seed}
                    for url, hop, context in sitemaps.seed_links(seed):
                        self.consider(url, hop, context, parent)
            if self.outbox is not None:
                self.outbox.flush()
            self.state.commit()
        else:
            log.info("resuming job %s from %s", self.spec.job_id, self.state.path)
        out = []
        for p in self.state.pending():
            req = self.make_request(p.url, p.key, p.hops, p.via, p.seed, p.context)
            if req is not None:
                out.append(req)
        # hand-offs taken in from now on are scheduled as they come, not by this list
        self.start_done = True
        return out

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
        self.state.begin()
        for url, hop, context, parent_hops, via, seed in entries:
            parent = {"hops": parent_hops, "url": via, "seed": seed}
            req = self.consider(url, hop, context, parent)
            if req is not None:
                new.append(req)
        self.state.set_meta("inbox_offset", str(offset))
        if self.outbox is not None:
            self.outbox.flush()
        self.state.commit()
        return new

    def discovered(
        self, links: list[tuple[str, str, str]], parent: dict[str, Any]
    ) -> list[scrapy.Request]:
        """Links found outside a spider callback (robots.txt's Sitemap: lines), decided in one
        transaction like a page's links."""
        new: list[scrapy.Request] = []
        self.state.begin()
        for url, hop, context in links:
            req = self.consider(url, hop, context, parent)
            if req is not None:
                new.append(req)
        if self.outbox is not None:
            self.outbox.flush()
        self.state.commit()
        return new

    def _domain(self, url: str) -> str:
        return self.budgets.domain_for(host_of(url))

    # --- discovery ----------------------------------------------------------------------------
    def consider(
        self, url: str, hop: str, context: str, parent: dict[str, Any], tag: str | None = None
    ) -> scrapy.Request | None:
        """Decide on a discovered link (inside the caller's transaction); ``tag`` is added to
        the annotations of a refusal's crawl.log line (``browser`` for a rendering page's)."""
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
        domain = self._domain(url)
        decision = self.scope.decide(url, hops)
        if decision.accepted:
            quota = self.budgets.blocked(domain)
            if quota:
                self._save_stop(domain)
                decision = type(decision)(False, FetchStatus.BLOCKED_BY_QUOTA, quota)
        if not decision.accepted:
            self.state.add(
                key,
                url,
                hops,
                via,
                seed,
                context,
                domain,
                st.FrontierState.REFUSED,
                decision.status,
            )
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
        return self.make_request(url, key, hops, via, seed, context)

    def _save_stop(self, domain: str) -> None:
        reason = self.budgets.domains[domain].stop_reason
        if reason is not None:
            self.state.set_meta(f"stop:{domain}", str(reason))

    # --- completion ---------------------------------------------------------------------------
    def finish_capture(
        self, request: scrapy.Request, cap: Capture, links: list[tuple[str, str, str]]
    ) -> list[scrapy.Request]:
        """A fetched URL: metadata record, frontier update + done mark in one transaction,
        then its crawl.log line."""
        hf = dict(request.meta["hf"])
        hf["url"] = request.url
        fields = page_fields(hf, cap.duration_ms, links)
        self.writer.write(metadata_record(request.url, cap.date, cap.record_id, fields))
        new: list[scrapy.Request] = []
        self.state.begin()
        for url, hop, context in links:
            req = self.consider(url, hop, context, hf)
            if req is not None:
                new.append(req)
        self.state.finish(hf["key"], st.FrontierState.DONE, cap.status, cap.size, cap.counted)
        if cap.status >= 300 and cap.status < 400 and hf["hops"] == "" and cap.location:
            self.state.set_meta(f"redirect:{request.url}", cap.location)
        if self.outbox is not None:
            self.outbox.flush()
        self.state.commit()
        self.log_capture(request, cap)
        return new

    def log_capture(self, request: scrapy.Request, cap: Capture) -> None:
        hf = request.meta.get("hf", {})
        tries = request.meta.get("retry_times", 0)
        annotations = list(cap.annotations)
        if tries:
            annotations.insert(0, f"{tries + 1}t")
        self.crawl_log.write(
            LogEntry(
                cap.status,
                request.url,
                hf.get("hops", "P"),
                hf.get("via"),
                mime=cap.mime,
                size=cap.size,
                fetch_start=cap.fetch_start,
                duration_ms=cap.duration_ms,
                digest=cap.digest,
                seed=hf.get("seed"),
                annotations=annotations,
            )
        )
        self.count(URLS_DONE)
        self.count(BYTES_DONE, cap.size)

    def finish_failure(
        self, request: scrapy.Request, status: int, annotations: list[str], final_state: int
    ) -> None:
        """A URL that was not fetched (refused before fetching, or failed)."""
        hf = request.meta.get("hf")
        if hf is None:
            return
        tries = request.meta.get("retry_times", 0)
        if tries:
            annotations = [f"{tries + 1}t", *annotations]
        if status == FetchStatus.BLOCKED_BY_QUOTA:
            self._save_stop(self._domain(request.url))
        self.state.begin()
        self.state.finish(hf["key"], final_state, status, 0, False)
        self.state.commit()
        if final_state == st.FrontierState.FAILED:
            self.count(FAILURES)
        self.crawl_log.write(
            LogEntry(
                status,
                request.url,
                hf["hops"],
                hf.get("via"),
                seed=hf.get("seed"),
                annotations=annotations,
            )
        )

    def record_dns(self, host: str, address: str) -> None:
        """A ``dns:`` record for a host name looked up in DNS (once per host and run).

        Why: the archive then says which address a host had when it was crawled (Heritrix
        writes the same). Addresses given with ``resolve`` are not DNS answers and get none;
        no crawl.log line either (readers of crawl.log count URLs, not lookups).
        """
        host = host.lower()
        if host in self.dns_recorded:
            return
        self.dns_recorded.add(host)
        when = dt.datetime.now(dt.UTC)
        record = dns_record(host, address, when)
        ((name, offset, length),) = self.writer.write(record)
        # no HTTP headers: the reference indexer gives a dns record no MIME and no status
        headers = record.rec_headers
        entry = CdxEntry(
            f"dns:{host}",
            headers.get_header("WARC-Date"),
            None,
            None,
            headers.get_header("WARC-Payload-Digest"),
            length,
            offset,
        )
        self.record_cdx(entry, name)

    def record_cdx(self, entry: CdxEntry, filename: str) -> None:
        """The CDX11 line of a record just written to data WARC ``filename``."""
        self._cdx.write(cdx11_line(entry, filename) + "\n")

    def close_files(self) -> None:
        """Close the WARC, crawl.log and CDX files (the state stays open for the reports)."""
        self._cdx.close()
        self.writer.close()
        self.crawl_log.close()

    @staticmethod
    def now_warc_date() -> str:
        return warc_date(dt.datetime.now(dt.UTC))


def attach(crawler: Crawler, ctx: CrawlContext) -> None:
    """Hang the job's context off ``crawler`` before it crawls: the one place that does."""
    setattr(crawler, CRAWLER_ATTRIBUTE, ctx)
    ctx.crawler = crawler


def context_of(crawler: Crawler) -> CrawlContext:
    """The job's context of ``crawler`` (for the components' ``from_crawler``)."""
    ctx = getattr(crawler, CRAWLER_ATTRIBUTE, None)
    if not isinstance(ctx, CrawlContext):
        raise RuntimeError(
            "this Scrapy crawler has no harvestflow job context: crawl through "
            "crawler.runner.run_spec, which attaches one (crawler.context.attach)"
        )
    return ctx
