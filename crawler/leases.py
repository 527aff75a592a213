"""Leases in the harvest database shared by every crawler: host politeness and job ownership.

Why in PostgreSQL: with several workers, two crawlers may fetch one host and their delays
would add up; every crawler reaches the harvest database, so a row per host holding its next
allowed fetch time (``host_leases``, taken by one atomic upsert) is the shared clock. With the
celery executor the host leases live in Redis instead (:mod:`crawler.broker_leases`). The job
lease (``job_leases``) names the one crawler running a job, renewed while it lives.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import time
import uuid
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import reactor, task, threads
from twisted.internet.defer import Deferred, DeferredList, DeferredLock

from crawler import CrawlerError
from crawler.context import context_of
from crawler.outages import PlatformUnavailable, outage_s, ride_out
from crawler.politeness import delay_settings, politeness_delay

if TYPE_CHECKING:
    from crawler.broker_leases import BrokerHostLeases

log = logging.getLogger(__name__)

JOB_LEASE_ENV = "HARVESTFLOW_JOB_LEASE"
POLL_S = 0.25  # a host held by another crawler (fetching) is asked again after this
# a waiting crawler's turn is kept this long past its next question (then it counts as gone)
WAITER_GRACE_S = 5.0


# The statements, built once (the host ones run twice per fetch).
_TAKE_HOST = sa.text(
    "INSERT INTO host_leases (host, next_fetch_at, holder, held_until)"
    " VALUES (:h, clock_timestamp(), :me,"
    "         clock_timestamp() + make_interval(secs => :hold))"
    " ON CONFLICT (host) DO UPDATE SET holder = EXCLUDED.holder,"
    "     held_until = EXCLUDED.held_until"
    " WHERE host_leases.next_fetch_at <= clock_timestamp()"
    "   AND (host_leases.held_until IS NULL"
    "        OR host_leases.held_until < clock_timestamp())"
    # in turn (migration 038): not while another live waiter holds an older ticket
    "   AND NOT EXISTS (SELECT 1 FROM host_lease_waiters w"
    "        WHERE w.host = :h AND w.holder <> :me AND w.expires_at > clock_timestamp()"
    "          AND w.ticket < COALESCE((SELECT ticket FROM host_lease_waiters"
    "              WHERE host = :h AND holder = :me), 9223372036854775807))"
    " RETURNING holder"
)
# a crawler that takes the host leaves the queue: its next request waits behind the others
_LEAVE_QUEUE = sa.text("DELETE FROM host_lease_waiters WHERE host = :h AND holder = :me")
# a crawler that did not get the host joins the queue (or keeps its ticket), alive until a
# little after it asks again
_JOIN_QUEUE = sa.text(
    "INSERT INTO host_lease_waiters (host, holder, ticket, expires_at)"
    " VALUES (:h, :me, nextval('host_lease_tickets'),"
    "         clock_timestamp() + make_interval(secs => :alive))"
    " ON CONFLICT (host, holder) DO UPDATE SET expires_at = EXCLUDED.expires_at"
)
_DROP_DEAD_WAITERS = sa.text(
    "DELETE FROM host_lease_waiters WHERE host = :h AND expires_at < clock_timestamp()"
)
_HOST_STATE = sa.text(
    "SELECT EXTRACT(EPOCH FROM next_fetch_at - clock_timestamp()) AS wait,"
    " held_until > clock_timestamp() AS held FROM host_leases WHERE host = :h"
)
_GIVE_BACK_HOST = sa.text(
    "UPDATE host_leases SET holder = NULL, held_until = NULL,"
    " next_fetch_at = clock_timestamp() + make_interval(secs => :d)"
    " WHERE host = :h AND holder = :me"
)
_TAKE_JOB = sa.text(
    "INSERT INTO job_leases (job_id, holder, expires_at)"
    " VALUES (:j, :me, clock_timestamp() + make_interval(secs => :ttl))"
    " ON CONFLICT (job_id) DO UPDATE SET holder = EXCLUDED.holder,"
    "     acquired_at = clock_timestamp(), heartbeat_at = clock_timestamp(),"
    "     expires_at = EXCLUDED.expires_at"
    " WHERE job_leases.expires_at < clock_timestamp()"
    "    OR job_leases.holder = EXCLUDED.holder"
    " RETURNING holder"
)
_JOB_STATE = sa.text("SELECT holder, heartbeat_at, expires_at FROM job_leases WHERE job_id = :j")
_HEARTBEAT_JOB = sa.text(
    "UPDATE job_leases SET heartbeat_at = clock_timestamp(),"
    " expires_at = clock_timestamp() + make_interval(secs => :ttl)"
    " WHERE job_id = :j AND holder = :me"
)
_RELEASE_JOB = sa.text("DELETE FROM job_leases WHERE job_id = :j AND holder = :me")
# a crawler killed without releasing its lease leaves its row; rows expired for more than a TTL
# (their holder has not come back) are deleted whenever a job's lease is taken
_PURGE_JOBS = sa.text(
    "DELETE FROM job_leases WHERE expires_at < clock_timestamp() - make_interval(secs => :ttl)"
)


def jobs_with_live_lease(conn: sa.Connection) -> set[int]:
    """The jobs whose crawler still renews its lease: alive, on whatever machine (harvest's
    dead-job detection asks here rather than reading ``job_leases`` itself)."""
    rows = conn.execute(
        sa.text("SELECT job_id FROM job_leases WHERE expires_at > clock_timestamp()")
    )
    return {int(r[0]) for r in rows}


def _take_or_state(
    engine: sa.Engine, take: sa.TextClause, state: sa.TextClause, params: dict[str, Any]
) -> sa.Row[Any] | None:
    """Run ``take`` (an upsert RETURNING a row when it took the lease); None when it did, else
    the lease's current row read by ``state`` in the same transaction (who holds it, until when).
    """
    with engine.begin() as conn:
        if conn.execute(take, params).first() is not None:
            return None
        return conn.execute(state, params).one()


def _update(engine: sa.Engine, stmt: sa.TextClause, params: dict[str, Any]) -> int:
    """Run one statement in its own transaction; the number of rows it touched."""
    with engine.begin() as conn:
        return conn.execute(stmt, params).rowcount


class LeaseHeld(CrawlerError, RuntimeError):
    """The job's lease is held by another live crawler."""


def holder_name() -> str:
    """Who holds a lease: the worker (or machine), the process and a random part."""
    worker = os.environ.get("HARVESTFLOW_WORKER_NAME") or socket.gethostname()
    return f"{worker}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def make_engine(url: str | None = None) -> sa.Engine:
    if url is None:
        from harvestflow.settings import get_settings

        url = get_settings().harvest_db_url
    return sa.create_engine(url, pool_size=2, max_overflow=4, pool_pre_ping=True)


def host_leases_enabled(polite: bool) -> bool:
    """``[crawler] host_leases``: true, false or "auto" (on with the celery executor)."""
    from harvestflow.settings import get_settings

    settings = get_settings()
    raw = settings.get("crawler", "host_leases", "auto")
    if not polite:
        return False
    if isinstance(raw, bool):
        return raw
    return str(raw).lower() == "auto" and settings.executor == "celery"


def open_host_leases(hold_s: float) -> HostLeases | BrokerHostLeases:
    """Host leases where they are cheapest: in the Celery broker's Redis when there is one (the
    celery executor: :mod:`crawler.broker_leases`), else in the harvest database."""
    from harvestflow.settings import get_settings

    settings = get_settings()
    if settings.executor == "celery":
        from crawler.broker_leases import BrokerHostLeases

        return BrokerHostLeases.from_url(
            settings.broker_url, holder_name(), hold_s, poll_s=POLL_S, grace_s=WAITER_GRACE_S
        )
    return HostLeases(make_engine(), holder_name(), hold_s)


# --- host leases ---------------------------------------------------------------------------------
class HostLeases:
    """The ``host_leases`` table: take a host (or learn how long to wait), give it back."""

    def __init__(self, engine: sa.Engine, holder: str, hold_s: float) -> None:
        self.engine = engine
        self.holder = holder
        self.hold_s = hold_s

    def try_take(self, host: str) -> float:
        """0.0 when this crawler now holds ``host``; else seconds to wait before asking again.

        Crawlers waiting for one host take it in turn: one that did not get it holds a ticket
        (``host_lease_waiters``) until it does, and the lease goes to the oldest live ticket.
        """
        params = {"h": host, "me": self.holder, "hold": self.hold_s}
        with self.engine.begin() as conn:
            if conn.execute(_TAKE_HOST, params).first() is not None:
                conn.execute(_LEAVE_QUEUE, params)
                return 0.0
            row = conn.execute(_HOST_STATE, params).one()
            wait = float(row.wait or 0.0)
            # held (fetching), or free but another crawler's turn: ask again soon
            wait = POLL_S if row.held or wait <= 0 else wait
            conn.execute(_JOIN_QUEUE, {**params, "alive": wait + WAITER_GRACE_S})
            return wait

    def give_back(self, host: str, delay_s: float) -> None:
        """Release ``host``: its next fetch (by anyone) no sooner than ``delay_s`` from now."""
        with self.engine.begin() as conn:
            params = {"h": host, "d": delay_s, "me": self.holder}
            conn.execute(_GIVE_BACK_HOST, params)
            conn.execute(_DROP_DEAD_WAITERS, params)

    def as_holder(self, holder: str, hold_s: float = 0.0) -> HostLeases:
        """The same table seen by another holder (an earlier run giving back what it left)."""
        return HostLeases(self.engine, holder, hold_s)

    def close(self) -> None:
        self.engine.dispose()


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


# --- job leases ----------------------------------------------------------------------------------
class JobLeases:
    """The ``job_leases`` table: one crawler per job, alive while it heartbeats."""

    def __init__(self, engine: sa.Engine, ttl_s: float = 90.0) -> None:
        self.engine = engine
        self.ttl_s = ttl_s

    def acquire(self, job_id: int, holder: str) -> None:
        """Take the job's lease, or raise :class:`LeaseHeld` naming the live holder; the rows
        of leases long expired go first."""
        params = {"j": job_id, "me": holder, "ttl": self.ttl_s}
        _update(self.engine, _PURGE_JOBS, {"ttl": self.ttl_s})
        row = _take_or_state(self.engine, _TAKE_JOB, _JOB_STATE, params)
        if row is None:
            return
        raise LeaseHeld(
            f"job {job_id} is being crawled by {row.holder} (last heartbeat {row.heartbeat_at}, "
            f"lease until {row.expires_at}); not starting a second crawler. Wait for it to end"
            f" (or for the lease to expire if it died), or stop it: harvestflow jobs stop {job_id}"
        )

    def heartbeat(self, job_id: int, holder: str) -> bool:
        """Extend the lease; False when it is no longer ours (another crawler took over)."""
        params = {"j": job_id, "me": holder, "ttl": self.ttl_s}
        return _update(self.engine, _HEARTBEAT_JOB, params) == 1

    def release(self, job_id: int, holder: str) -> None:
        _update(self.engine, _RELEASE_JOB, {"j": job_id, "me": holder})


class JobLeaseHeartbeat:
    """Extension: renew the job's lease from inside the crawler (``HARVESTFLOW_JOB_LEASE``)."""

    def __init__(self, crawler: Crawler) -> None:
        raw = os.environ.get(JOB_LEASE_ENV)
        if not raw:
            raise NotConfigured
        job, _, self.holder = raw.partition("=")
        self.job_id = int(job)
        ttl = float(os.environ.get(JOB_LEASE_ENV + "_TTL", "90"))
        self.leases = JobLeases(make_engine(), ttl_s=ttl)
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
