"""The crawler's side of the leases: a downloader middleware taking the host's lease before each
fetch, and an extension renewing the job's lease while the crawler runs.

The tables, their statements and the store objects are in :mod:`crawler.lease_tables` (no Scrapy
there: the processes that never crawl use them); the names are re-exported here for the callers
that already have Scrapy loaded.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections import Counter, defaultdict
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import reactor, task, threads
from twisted.internet.defer import Deferred, DeferredList, DeferredLock

from crawler.context import context_of
from crawler.lease_switches import JOB_LEASE_ENV, host_leases_enabled
from crawler.lease_tables import (
    POLL_S,
    WAITER_GRACE_S,
    HostLeases,
    JobLeases,
    LeaseHeld,
    holder_name,
    job_lease_engine,
    jobs_with_live_lease,
    make_engine,
    open_host_leases,
)
from crawler.outages import PlatformUnavailable, outage_s, ride_out
from crawler.politeness import delay_settings, politeness_delay

__all__ = [
    "JOB_LEASE_ENV",
    "POLL_S",
    "WAITER_GRACE_S",
    "HostLeaseMiddleware",
    "HostLeases",
    "JobLeaseHeartbeat",
    "JobLeases",
    "LeaseHeld",
    "holder_name",
    "job_lease_engine",
    "jobs_with_live_lease",
    "make_engine",
    "open_host_leases",
]

log = logging.getLogger(__name__)


class HostLeaseMiddleware:
    """Downloader middleware: wait for the host's cluster-wide lease before each fetch.

    Ordered before the capture middleware (lower order), so its process_response runs after the
    capture is built and can note the wait in crawl.log's annotations (``leaseWait:<ms>``).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.factor, self.min_s, self.max_s, self.cap_s = delay_settings(crawler.settings)
        polite = self.factor > 0 or self.min_s > 0 or self.max_s > 0
        if not host_leases_enabled(polite):
            raise NotConfigured
        self.ctx = context_of(crawler)
        # a crawler that dies holding a host blocks it at most this long
        hold_s = crawler.settings.getfloat("DOWNLOAD_TIMEOUT") + self.cap_s + 60.0
        self.leases = open_host_leases(hold_s)
        self.outage_s = outage_s()
        self.unavailable: str | None = None  # set once the harvest DB stayed away too long
        self.held: set[str] = set()  # hosts whose lease this crawler holds
        self.giving_back: set[Deferred[Any]] = set()  # give-backs still under way
        self.stuck_file = self.ctx.jobdir.leases_held
        self._give_back_stuck()
        self.locks: dict[str, DeferredLock] = defaultdict(DeferredLock)
        self.waited_ms: Counter[str] = Counter()
        self.waits: Counter[str] = Counter()
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(
            self.request_left_downloader, signal=signals.request_left_downloader
        )
        store = "host_leases" if isinstance(self.leases, HostLeases) else "the broker"
        log.info("host politeness shared through %s (holder %s)", store, self.leases.holder)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HostLeaseMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request, spider: Any = None) -> None:
        host = urlparse_cached(request).hostname or ""
        await maybe_deferred_to_future(self.locks[host].acquire())
        start = time.monotonic()
        try:
            if self.unavailable is not None:  # the crawl is stopping: no second long wait
                raise PlatformUnavailable(self.unavailable)
            while True:
                # the harvest DB away: this host's fetches pause (bounded), never fail the URL
                wait = await maybe_deferred_to_future(
                    threads.deferToThread(
                        ride_out,
                        f"host lease of {host}",
                        lambda: self.leases.try_take(host),
                        self.outage_s,
                    )
                )
                if wait <= 0:
                    break
                await maybe_deferred_to_future(task.deferLater(reactor, wait, lambda: None))
        except BaseException as exc:
            if isinstance(exc, PlatformUnavailable):
                self.unavailable = str(exc)
            self.locks[host].release()
            raise
        waited = int((time.monotonic() - start) * 1000)
        request.meta["hf_lease_wait_ms"] = waited
        request.meta["hf_lease_held"] = True
        self.held.add(host)
        if waited >= 1:
            self.waited_ms[host] += waited
            self.waits[host] += 1

    def _give_back(self, request: Request, duration_s: float) -> None:
        if not request.meta.pop("hf_lease_held", False):
            return  # given back already (at the fetch's end), or never taken
        host = urlparse_cached(request).hostname or ""
        delay = politeness_delay(
            duration_s,
            self.factor,
            self.min_s,
            self.max_s,
            self.ctx.crawl_delays.get(host),
            self.cap_s,
        )
        d = threads.deferToThread(
            ride_out,
            f"host lease of {host} (give back)",
            lambda: self.leases.give_back(host, delay),
            self.outage_s,
        )
        d.addCallback(lambda _: self.held.discard(host))
        d.addErrback(lambda f: log.error("host lease of %s not given back: %s", host, f.value))
        d.addBoth(lambda _: self.locks[host].release())
        self.giving_back.add(d)
        d.addBoth(lambda _: self.giving_back.discard(d))

    def request_left_downloader(self, request: Request, spider: Any = None) -> None:
        """The fetch is over (answered or failed): the host is given back at once, before the
        capture is written, so a capture failing on our platform cannot keep the host."""
        start = request.meta.get("hf_fetch_start")
        self._give_back(request, max(0.0, time.time() - start) if start else 0.0)

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response:
        if "hf_lease_wait_ms" not in request.meta:
            return response
        self.request_left_downloader(request)  # normally done already: then a no-op
        waited = request.meta.pop("hf_lease_wait_ms")
        capture = request.meta.get("hf_capture")
        if waited >= 1 and capture is not None:
            capture.annotations.append(f"leaseWait:{waited}ms")
        return response

    def process_exception(
        self, request: Request, exception: BaseException, spider: Any = None
    ) -> None:
        request.meta.pop("hf_lease_wait_ms", None)
        self._give_back(request, 0.0)  # a no-op when given back at the fetch's end

    def spider_closed(self, spider: Any) -> Deferred[Any]:
        """reports/host-leases-report.txt: per host, the time spent waiting for other crawlers;
        then, once the give-backs under way have ended (a last fetch's may still be), the leases
        not given back are written down for the next run."""
        lines = ["[host] [waits] [waited-ms]"]
        for host, ms in self.waited_ms.most_common():
            lines.append(f"{host} {self.waits[host]} {ms}")
        self.ctx.jobdir.report("host-leases-report.txt").write_text("\n".join(lines) + "\n")
        pending = DeferredList(list(self.giving_back), consumeErrors=True)
        pending.addTimeout(10, reactor)  # the harvest DB away: written down, not waited for
        pending.addBoth(lambda _: self._note_stuck())
        return pending

    def _note_stuck(self) -> None:
        if self.held:  # not given back (the harvest DB away): the next run of the job does it
            self.stuck_file.write_text(
                json.dumps({"holder": self.leases.holder, "hosts": sorted(self.held)})
            )
        self.leases.close()

    def _give_back_stuck(self) -> None:
        """Give back the leases an earlier run of this job could not (it ended while the harvest
        DB was away): they would block the host for ``hold_s`` — for this resumed run too.
        Safe: that run has ended (this one resumes its frontier)."""
        if not self.stuck_file.exists():
            return
        stuck = json.loads(self.stuck_file.read_text())
        earlier = self.leases.as_holder(stuck["holder"])
        for host in stuck["hosts"]:
            give = functools.partial(earlier.give_back, host, 0.0)
            ride_out(f"host lease of {host} (earlier run)", give, 30)
            log.info("host lease of %s left by the earlier run given back", host)
        self.stuck_file.unlink()


class JobLeaseHeartbeat:
    """Extension: renew the job's lease from inside the crawler (``HARVESTFLOW_JOB_LEASE``)."""

    def __init__(self, crawler: Crawler) -> None:
        raw = os.environ.get(JOB_LEASE_ENV)
        if not raw:
            raise NotConfigured
        job, _, self.holder = raw.partition("=")
        self.job_id = int(job)
        ttl = float(os.environ.get(JOB_LEASE_ENV + "_TTL", "90"))
        self.leases = JobLeases(job_lease_engine(), ttl_s=ttl)
        self.crawler = crawler
        self.loop = task.LoopingCall(self._beat)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JobLeaseHeartbeat:
        return cls(crawler)

    def spider_opened(self, spider: Any) -> None:
        self.loop.start(max(self.leases.ttl_s / 3.0, 1.0), now=True)

    def _beat(self) -> Any:
        d = threads.deferToThread(self.leases.heartbeat, self.job_id, self.holder)

        def check(ours: bool) -> None:
            if not ours and self.crawler.engine is not None:
                log.error("job %s: lease lost to another crawler; stopping", self.job_id)
                closing = deferred_from_coro(
                    self.crawler.engine.close_spider_async(reason="lease_lost")
                )
                closing.addErrback(lambda f: log.error("job %s: close failed: %s", self.job_id, f))

        d.addCallback(check)
        d.addErrback(lambda f: log.warning("job %s: heartbeat failed: %s", self.job_id, f.value))
        return d

    def spider_closed(self, spider: Any) -> None:
        if self.loop.running:
            self.loop.stop()
        self.leases.engine.dispose()
