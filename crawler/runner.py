"""Running one job in this process: Scrapy settings, the crawl, then reports, metadata WARC
and summary.json.

Why the order at the end: the data WARCs are closed first (their CDX goes in the metadata WARC),
then reports are written from crawl.log, then the metadata WARC gathers spec, logs and reports,
and summary.json — what the harvest DB ingests — is written last, under a temporary name, so its
presence means the job's output is complete. Twisted's reactor runs once per process: call
:func:`run_job` once per process (the DAG runs ``python -m crawler`` as a child process).
"""

from __future__ import annotations

import datetime as dt
import gc
import logging
import resource
from dataclasses import asdict
from pathlib import Path
from typing import Any

from crawler import jobspec
from crawler.context import CrawlContext, attach
from crawler.control import STOP_BY_OPERATOR, control_settings
from crawler.internals import offline_cookie_public_suffixes
from crawler.jobspec import JobSpec, Template, freeze_job
from crawler.lease_switches import host_leases_enabled, job_lease_given
from crawler.partitioning.handoff import Partition
from crawler.reports import CRAWL_STATUS_TEXT, write_reports
from crawler.warc.metadata import write_metadata_warc
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.summary import DomainSummary, JobSummary
from harvestflow.formats.stop_reasons import StopReason

log = logging.getLogger(__name__)

# allocations between young-generation collections during a crawl (Python's default is 700)
GC_YOUNG_THRESHOLD = 20_000

STATUS_BY_REASON = {
    "finished": "complete",
    "closespider_timeout": "time_limit",
    # crawler.control: an operator's stop action (the job is DONE, like a finished one)
    STOP_BY_OPERATOR: "stopped",
}


# Scrapy middlewares a harvestflow crawl has no use for (each is one more coroutine step per
# request or response):
_UNUSED_DOWNLOADER_MW: dict[str, None] = {
    # sends one spider-wide login (http_user/http_pass): crawler.credentials.LoginMiddleware
    # does the job's logins instead (Basic, Digest, forms; per credential domain)
    "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware": None,
    # downloader/* byte and count stats (it serialises each request and response's headers
    # to count their size); nothing reads them: crawl.log and the reports count from captures
    "scrapy.downloadermiddlewares.stats.DownloaderStats": None,
}
_UNUSED_SPIDER_MW: dict[str, None] = {
    # warns when a spider copies response.meta into new requests; make_request builds each
    # request's meta afresh
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
    # drops non-2xx responses unless HTTPERROR_ALLOW_ALL, which an archival crawl sets (every
    # status is a capture): with it, a step per response that passes everything on
    "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": None,
}


# Scrapy extensions a crawl never runs, left out of EXTENSIONS_BASE itself rather than set to None
# in EXTENSIONS: Scrapy imports every EXTENSIONS key to match it with its base entry, and
# scrapy.extensions.remote_control imports aiohttp's web server (~0.25 CPU-s in every crawl)
_UNUSED_EXTENSIONS = frozenset(
    {
        "scrapy.extensions.telnet.TelnetConsole",
        # runs Python code sent over HTTP: never in a crawler (REMOTE_CONTROL_ENABLED is off too)
        "scrapy.extensions.remote_control.RemoteControl",
        "scrapy.extensions.logstats.LogStats",  # crawler.statslog logs the progress
    }
)


def extensions_base() -> dict[str, int]:
    """Scrapy's own EXTENSIONS_BASE without the extensions a crawl never runs."""
    from scrapy.settings import default_settings

    base: dict[str, int] = default_settings.EXTENSIONS_BASE
    return {name: order for name, order in base.items() if name not in _UNUSED_EXTENSIONS}


# the template's fetch_client → the http(s) download handler
_FETCH_HANDLERS = {
    "twisted": "crawler.capture_middleware.ArchivalHTTPDownloadHandler",
    "asyncio": "crawler.asyncio_fetch.ArchivalAsyncioDownloadHandler",
}


def template_settings(t: Template) -> dict[str, Any]:
    """Every template value as the Scrapy setting ``HARVESTFLOW_<KEY>`` (``max_response_bytes``
    → ``HARVESTFLOW_MAX_RESPONSE_BYTES``), read by the components with ``settings.get*``.

    Why all of them, by one rule: a component never needs the job spec for a value, and the
    name of a value's setting needs no table. Values Scrapy has a setting for are read there
    too (``obey_robots`` → ROBOTSTXT_OBEY, ``download_timeout_s`` → DOWNLOAD_TIMEOUT, ``retries``
    → RETRY_TIMES), and the components read those.
    """
    return {f"HARVESTFLOW_{key.upper()}": value for key, value in asdict(t).items()}


def job_settings(spec: JobSpec, progress_interval_s: float) -> dict[str, Any]:
    """The job's own values the components read (besides the template's)."""
    return {
        "HARVESTFLOW_JOB_ID": spec.job_id,
        # host → address overrides of the template and the job (the job's win)
        "HARVESTFLOW_RESOLVE": spec.all_resolve,
        "HARVESTFLOW_CREDENTIALS": spec.credentials,
        "HARVESTFLOW_PROGRESS_INTERVAL": progress_interval_s,
    }


def scrapy_settings(
    spec: JobSpec, partition: Partition | None = None, progress_interval_s: float = 10.0
) -> dict[str, Any]:
    """Scrapy settings for the job's template."""
    t = spec.template
    polite = t.delay_factor > 0 or t.min_delay_ms > 0
    # the lease components are listed only when a lease is taken: their module loads SQLAlchemy
    # (crawler/lease_switches.py); the same rule as HostLeaseMiddleware's (delay_settings)
    host_leases = host_leases_enabled(polite or t.max_delay_ms > 0)
    settings: dict[str, Any] = {
        **template_settings(t),
        **job_settings(spec, progress_interval_s),
        "BOT_NAME": "harvestflow",
        "USER_AGENT": spec.user_agent,
        "DEFAULT_REQUEST_HEADERS": {
            "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "Accept-Language": "en",
            **({"From": spec.from_email} if spec.from_email else {}),
        },
        "ROBOTSTXT_OBEY": t.obey_robots,
        "ROBOTSTXT_PARSER": "scrapy.robotstxt.ProtegoRobotParser",
        "ROBOTSTXT_USER_AGENT": spec.user_agent.split("/")[0],
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            **(
                {"crawler.capture_middleware.BrowserClaimMiddleware": 50}
                if t.render != "none"
                else {}
            ),
            "crawler.politeness.ArchivalRobotsTxtMiddleware": 100,
            "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
            "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
            "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
            # Content-Encoding is decoded by crawler.inflate, bounded, and only for link extraction
            "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
            "crawler.inflate.BoundedDecompressionMiddleware": 590,
            **_UNUSED_DOWNLOADER_MW,
            # before CookiesMiddleware (700): a request waiting for a form login gets its cookies;
            # only in jobs with credentials (it imports the credential store)
            **({"crawler.credentials.LoginMiddleware": 650} if spec.credentials else {}),
            # no fetch on a nearly full disk (crawler/outages.py): the crawl stops resumable
            "crawler.outages.DiskSpaceGuard": 920,
            # quota and address refusals before the host's lease: they take no lease or delay
            "crawler.capture_middleware.RefuseBeforeFetchMiddleware": 930,
            # cluster-wide host politeness (crawler/leases.py; off unless [crawler] host_leases)
            **({"crawler.leases.HostLeaseMiddleware": 940} if host_leases else {}),
            "crawler.capture_middleware.WarcCaptureMiddleware": 950,
        },
        "SPIDER_MIDDLEWARES": {
            "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
            "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
            **_UNUSED_SPIDER_MW,
            # lowest order: the last to see a callback's output (after RefererMiddleware)
            "crawler.spider.ScheduleOutputMiddleware": 1,
        },
        "EXTENSIONS_BASE": extensions_base(),
        "EXTENSIONS": {
            "crawler.politeness.Politeness": 500,
            "crawler.statslog.ProgressStatistics": 510,
            "crawler.robots_sitemaps.RobotsSitemaps": 530,
            "crawler.frontier_refill.FrontierRefill": 535,
            # only with a job lease (crawl tasks)
            **({"crawler.leases.JobLeaseHeartbeat": 540} if job_lease_given() else {}),
            "crawler.ownerwatch.OwnerWatch": 550,  # SIGHUP: its supervisor is gone
            **({"crawler.partition_ext.PartitionCoordinator": 520} if partition else {}),
        },
        "DOWNLOAD_HANDLERS": {
            "http": _FETCH_HANDLERS[t.fetch_client],
            "https": _FETCH_HANDLERS[t.fetch_client],
            # an archival crawl of the web fetches http(s) only: never ftp/s3/file/data
            "ftp": None,
            "s3": None,
            "file": None,
            "data": None,
        },
        "TWISTED_DNS_RESOLVER": "crawler.resolver.ArchivalResolver",
        "DNS_TIMEOUT": 20,
        "HTTPERROR_ALLOW_ALL": True,
        "REDIRECT_ENABLED": False,
        "METAREFRESH_ENABLED": False,
        "RETRY_ENABLED": t.retries > 0,
        "RETRY_TIMES": t.retries,
        "RETRY_HTTP_CODES": [],
        "DOWNLOAD_TIMEOUT": t.download_timeout_s,
        # the capture middleware truncates at max_response_bytes (the handler lifts Scrapy's own
        # limit, which would discard the response); decompression is bounded by crawler.inflate
        "DOWNLOAD_MAXSIZE": max(t.max_response_bytes * 10, 1 << 20),
        "DOWNLOAD_WARNSIZE": 0,
        "DOWNLOAD_DELAY": t.min_delay_ms / 1000.0 if polite else 0,
        "DOWNLOAD_DELAY_JITTER": 0,
        "CONCURRENT_REQUESTS": t.concurrent_requests,
        "CONCURRENT_REQUESTS_PER_DOMAIN": t.connections_per_host,
        # Scrapy makes CONCURRENT_ITEMS (default 100) asyncio worker tasks per response to
        # process a callback's output; ScheduleOutputMiddleware has scheduled its Requests
        # already (in the same order and loop step), so one worker is enough
        "CONCURRENT_ITEMS": 1,
        "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        # Scrapy's default per-host queue looks at every waiting host on each pop: thousands in
        # a broad crawl; this one looks at the busy hosts only (crawler/slot_queue.py)
        "SCHEDULER_PRIORITY_QUEUE": "crawler.slot_queue.RoundRobinSlotQueue",
        "CLOSESPIDER_TIMEOUT": spec.max_running_time_s,
        "COOKIES_ENABLED": True,
        "TELNETCONSOLE_ENABLED": False,
        # Scrapy's remote-control extension runs Python code sent over HTTP: never in a crawler
        "REMOTE_CONTROL_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "LOG_INSTALL_ROOT_HANDLER": False,
        "HTTPCACHE_ENABLED": False,
        # never through an http_proxy/https_proxy from the environment: the address rule checks
        # the address we connect to and WARC-IP-Address records it, so both must be the origin's
        "HTTPPROXY_ENABLED": False,
    }
    return control_settings(spec, settings)


def summarise(
    ctx: CrawlContext, status: str, ended: dt.datetime, meta_warc: Path | None
) -> JobSummary:
    totals = ctx.state.domain_totals()
    remaining: dict[str, int] = {}
    for host, n in ctx.state.queued_by_host().items():
        domain = ctx.budgets.domain_for(host)
        remaining[domain] = remaining.get(domain, 0) + n
    domains: dict[str, DomainSummary] = {}
    for name, b in ctx.budgets.domains.items():
        if not name:
            continue
        objects, nbytes = totals.get(name, (0, 0))
        reason = b.stop_reason
        if reason is None:
            if status == "time_limit" and remaining.get(name):
                reason = StopReason.TIME_LIMIT
            elif status == "unfinished" and remaining.get(name):
                reason = StopReason.DOWNLOAD_UNFINISHED
            elif status == "stopped" and remaining.get(name):
                reason = StopReason.STOPPED_BY_OPERATOR
            else:
                reason = StopReason.DOWNLOAD_COMPLETE
        domains[name] = DomainSummary(
            config_id=b.config_id,
            objects=objects,
            bytes=nbytes,
            stop_reason=reason,
            in_job=name in ctx.budgets.job_domains,
        )
    warcs = sorted(p.name for p in ctx.jobdir.warcs.glob(f"{ctx.spec.warc_prefix}-*.warc.gz"))
    return JobSummary(
        job_id=ctx.spec.job_id,
        status=status,
        started=ctx.runs[0],
        resumed=ctx.runs[1:],
        ended=ended.isoformat(),
        urls=sum(o for o, _ in totals.values()),
        bytes=sum(b for _, b in totals.values()),
        warcs=warcs,
        metadata_warc=meta_warc.name if meta_warc else None,
        domains=domains,
        repaired_warcs=list(ctx.repaired),
    )


def finish(ctx: CrawlContext, job_file: Path | None) -> JobSummary:
    """Close the WARCs, write reports, the metadata WARC and summary.json."""
    status = STATUS_BY_REASON.get(ctx.end_reason, "unfinished")
    ctx.close_files()
    ended = dt.datetime.now(dt.UTC)
    if ctx.partition is not None:
        # a partition child: the parent merges logs and state, writes the reports, the one
        # metadata WARC and the job's summary.json from the children's
        summary = summarise(ctx, status, ended, None)
        summary.peak_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        ctx.state.close()
        summary.write(JobDir(ctx.jobdir.path).summary_json)
        return summary
    write_reports(
        ctx.jobdir.reports,
        JobDir(ctx.jobdir.path).crawl_log,
        ctx.state,
        ctx.spec.seeds,
        f"job-{ctx.spec.job_id}",
        CRAWL_STATUS_TEXT[status],
        ctx.started,
    )
    data_warcs = sorted(ctx.jobdir.warcs.glob(f"{ctx.spec.warc_prefix}-*.warc.gz"))
    meta = write_metadata_warc(
        ctx.jobdir.warcs,
        ctx.spec.job_id,
        ctx.spec.harvest_id,
        ctx.spec.organisation,
        {
            "setup": [p for p in [job_file] if p is not None],
            "logs": sorted(ctx.jobdir.logs.glob("*.log")),
            "reports": sorted(ctx.jobdir.reports.glob("*.txt")),
        },
        data_warcs,
        recorded_cdx=ctx.jobdir.recorded_cdx,
        reindex=set(ctx.repaired),
    )
    summary = summarise(ctx, status, ended, meta)
    ctx.state.close()
    summary.write(JobDir(ctx.jobdir.path).summary_json)
    return summary


def run_spec(
    spec: JobSpec,
    out_dir: Path,
    *,
    progress_interval_s: float = 10.0,
    job_file: Path | None = None,
    partition: Partition | None = None,
) -> JobSummary:
    """Crawl ``spec`` into ``out_dir`` in this process (once per process: Twisted's reactor)."""
    from scrapy.crawler import CrawlerProcess

    from crawler.spider import ArchiveSpider

    offline_cookie_public_suffixes()  # nothing may be fetched at run time
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = CrawlContext(spec, out_dir, partition=partition)
    handler = logging.FileHandler(ctx.jobdir.crawler_log, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    # crawler.log gets INFO whatever the caller's level; Scrapy's per-URL DEBUG lines would
    # only repeat crawl.log
    logging.getLogger("scrapy").setLevel(logging.INFO)
    if logging.getLogger("crawler").getEffectiveLevel() > logging.INFO:
        logging.getLogger("crawler").setLevel(logging.INFO)
    try:
        log.info("crawl job %s into %s (%d seeds)", spec.job_id, out_dir, len(spec.seeds))
        process = CrawlerProcess(scrapy_settings(spec, partition, progress_interval_s))
        # CrawlerProcess's configure_logging sets the "scrapy" logger back to DEBUG
        logging.getLogger("scrapy").setLevel(logging.INFO)
        crawler = process.create_crawler(ArchiveSpider)
        attach(crawler, ctx)  # the job's services, for every component's from_crawler
        process.crawl(crawler)
        thresholds = gc.get_threshold()
        # what start-up built (modules, Scrapy's components) is frozen out of the cyclic
        # collector, and young collections run every 20,000 allocations instead of 700: on the
        # bench's one-host crawl (1,353 URLs) the collector's time fell from ~0.25 s (2 full
        # collections of ~55 ms walking everything imported, ~250 young ones) to ~0.05 s;
        # garbage is still collected (peak RSS +4 MB there). The collector is on from here
        # (the crawl command keeps it off while the process starts: crawler.command_line)
        gc.freeze()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
        gc.enable()
        try:
            process.start()
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()
        return finish(ctx, job_file)
    finally:
        root.removeHandler(handler)
        handler.close()


def run_job(job_path: Path, out_dir: Path, *, progress_interval_s: float = 10.0) -> JobSummary:
    """Run the job of ``job_path`` into ``out_dir``; returns the summary (also summary.json).

    The job spec is copied to ``out_dir/job.json`` (the frozen spec the crawler ran). Running
    it again on the same ``out_dir`` resumes from the persisted frontier.
    """
    spec = jobspec.load(Path(job_path))
    frozen = freeze_job(Path(job_path), Path(out_dir))
    return run_spec(spec, out_dir, progress_interval_s=progress_interval_s, job_file=frozen)
