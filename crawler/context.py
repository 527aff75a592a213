"""The state of one running job shared by the crawl's Scrapy components.

Why one object: the spider and the Scrapy components all need the same job spec, records,
crawl.log, persistent frontier and budgets. Built once by the runner and hung off the Scrapy
crawler by :func:`attach`, taken by each component with :func:`context_of`. Its parts have
homes of their own (:mod:`crawler.frontier`, :mod:`crawler.request_builder`,
:mod:`crawler.warc.job_writer`); the fetch → record → persist → log steps stay here so that
their order, which matters for resuming after a crash, is written down in one place.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import scrapy

from crawler import state as st
from crawler.crawllog_writer import CrawlLog, LogEntry, format_line
from crawler.dedup_lookup import EarlierCapture, by_digest, load_index
from crawler.frontier import Frontier
from crawler.jobspec import JobSpec
from crawler.partitioning.handoff import Partition
from crawler.request_builder import RequestBuilder
from crawler.warc.files import OPEN_SUFFIX, repair_open_file
from crawler.warc.job_writer import JobRecords
from crawler.warc.records import metadata_record, page_fields
from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.fetch_status import FetchStatus

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

# the crawler attribute the job's context hangs off (set by attach(), read by context_of())
CRAWLER_ATTRIBUTE = "harvestflow_context"

# the context's counters in crawler.stats
URLS_DONE = "harvestflow/urls_done"
BYTES_DONE = "harvestflow/bytes_done"
FAILURES = "harvestflow/failures"
# the renderer's counters (crawler/rendering/renderer.py), here so that the progress line reads
# them without importing the renderer (and aiohttp) into a crawl that renders nothing
RENDERED = "harvestflow/render/rendered"
RENDER_FAILED = "harvestflow/render/failed"

# the state's meta key holding [offset, line]: the crawl.log line of the URL finished last and
# the byte offset it goes to, committed with the URL's done mark (see commit_logged)
LAST_LINE = "crawllog:last"


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
        self.jobdir = JobDir(out_dir)
        jd = self.jobdir
        for d in (jd.warcs, jd.logs, jd.reports, jd.state):
            d.mkdir(parents=True, exist_ok=True)
        self.repaired = [repair_open_file(p)[0].name for p in jd.warcs.glob("*" + OPEN_SUFFIX)]
        self.state = st.CrawlState(jd.crawl_state)
        self.crawl_log = CrawlLog(jd.crawl_log)
        self._restore_lost_line()
        self.requests = RequestBuilder(spec, self.state, self.crawl_log)
        self.frontier = Frontier(spec, self.state, self.crawl_log, self.requests, partition)
        self.scope = self.frontier.scope
        self.budgets = self.frontier.budgets
        self.dedup: dict[str, EarlierCapture] = (
            load_index(Path(spec.dedup_index)) if spec.dedup_index else {}
        )
        self.dedup_digests: dict[str, EarlierCapture] = by_digest(self.dedup)
        self.records = JobRecords(spec, jd, partition.index if partition else None)
        self.refused_hosts: dict[str, str] = {}  # host → address refused by the safety rule
        self.crawl_delays: dict[str, float] = {}  # host → robots.txt Crawl-delay (s)
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

    def start_requests(self) -> list[scrapy.Request]:
        """Seeds on a fresh start; the persisted frontier on a resumed one."""
        out = self.frontier.start()
        # hand-offs taken in from now on are scheduled as they come, not by this list
        self.start_done = True
        return out

    # --- completion ---------------------------------------------------------------------------
    def finish_capture(
        self, request: scrapy.Request, cap: Capture, links: list[tuple[str, str, str]]
    ) -> list[scrapy.Request]:
        """A fetched URL: metadata record, frontier update + done mark in one transaction,
        then its crawl.log line."""
        hf = dict(request.meta["hf"])
        hf["url"] = request.url
        fields = page_fields(hf, cap.duration_ms, links)
        self.records.write(metadata_record(request.url, cap.date, cap.record_id, fields))
        self.state.begin()
        self.crawl_log.hold()  # the links' refusal lines go with the done mark
        new = self.frontier.consider_all(links, hf)
        self.state.finish(hf["key"], st.FrontierState.DONE, cap.status, cap.size, cap.counted)
        if cap.status >= 300 and cap.status < 400 and hf["hops"] == "" and cap.location:
            self.state.set_meta(f"redirect:{request.url}", cap.location)
        self.commit_logged(self.capture_entry(request, cap), self.frontier.commit)
        self.count_capture(cap)
        return new

    def commit_logged(self, entry: LogEntry, commit: Callable[[], None]) -> None:
        """Commit the open transaction (a URL's done mark) with ``entry``'s line, then write it
        (after the lines held back since the transaction began: its links' refusals).

        Why: a done URL is never fetched again on resume, so a kill between the commit and the
        line's write would lose the line for good. The line and the offset it goes to are
        committed with the mark; on resume :meth:`_restore_lost_line` writes it if the file
        does not hold it there. (Writing the line first would log a URL twice instead.)
        """
        lines = "\n".join([*self.crawl_log.release(), format_line(entry)])
        self.state.set_meta(LAST_LINE, json.dumps([self.crawl_log.size, lines]))
        commit()
        self.crawl_log.write_line(lines)

    def _restore_lost_line(self) -> None:
        saved = self.state.get_meta(LAST_LINE)
        if saved is None:
            return
        offset, lines = json.loads(saved)
        lost = self.crawl_log.missing(offset, lines)
        if lost is not None:
            self.crawl_log.write_line(lost)
            log.warning(
                "crawl.log lines lost by a kill after their URL was done, restored: %s", lost
            )

    def capture_entry(self, request: scrapy.Request, cap: Capture) -> LogEntry:
        """The crawl.log entry of a fetched URL."""
        hf = request.meta.get("hf", {})
        tries = request.meta.get("retry_times", 0)
        annotations = list(cap.annotations)
        if tries:
            annotations.insert(0, f"{tries + 1}t")
        return LogEntry(
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

    def count_capture(self, cap: Capture) -> None:
        self.count(URLS_DONE)
        self.count(BYTES_DONE, cap.size)

    def log_capture(self, request: scrapy.Request, cap: Capture) -> None:
        """The crawl.log line of a fetch that marks nothing done (a prerequisite: robots.txt)."""
        self.crawl_log.write(self.capture_entry(request, cap))
        self.count_capture(cap)

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
            self.frontier.save_stop(self.frontier.domain_of(request.url))
        self.state.begin()
        self.state.finish(hf["key"], final_state, status, 0, False)
        entry = LogEntry(
            status, request.url, hf["hops"], hf.get("via"), seed=hf.get("seed"),
            annotations=annotations,
        )  # fmt: skip
        self.commit_logged(entry, self.state.commit)
        if final_state == st.FrontierState.FAILED:
            self.count(FAILURES)

    def close_files(self) -> None:
        """Close the WARC, crawl.log and CDX files (the state stays open for the reports)."""
        self.records.close()
        self.crawl_log.close()


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
