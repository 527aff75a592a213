"""The lease tables in the harvest database, without Scrapy: host politeness and job ownership.

Why apart from the crawler's middleware (crawler/leases.py): the crawl task, the job lease around
it and harvest's dead-job detection use these tables in processes that never crawl; importing
Scrapy and Twisted there cost every task ~1 CPU-second at start. Why in PostgreSQL: with several
workers, two crawlers may fetch one host and their delays would add up; every crawler reaches
the harvest database, so a row per host holding its next allowed fetch time (``host_leases``,
taken by one atomic upsert) is the shared clock. With the celery executor the host leases live
in Redis instead (:mod:`crawler.broker_leases`). The job lease (``job_leases``) names the one
crawler running a job, renewed while it lives.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from crawler import CrawlerError

if TYPE_CHECKING:
    from crawler.broker_leases import BrokerHostLeases

log = logging.getLogger(__name__)

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
# who holds the job, and how long its lease still runs without a heartbeat (the database's clock)
_JOB_STATE = sa.text(
    "SELECT holder, heartbeat_at, expires_at,"
    " EXTRACT(EPOCH FROM expires_at - clock_timestamp()) AS expires_in"
    " FROM job_leases WHERE job_id = :j"
)
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
    """The job's lease is held by another live crawler.

    ``expires_in_s``: how long that lease still runs unless its holder renews it (None when not
    known), so that a caller waiting for a dead holder's lease asks again just as it expires.
    """

    def __init__(self, message: str, expires_in_s: float | None = None) -> None:
        super().__init__(message)
        self.expires_in_s = expires_in_s


def holder_name() -> str:
    """Who holds a lease: the worker (or machine), the process and a random part."""
    worker = os.environ.get("HARVESTFLOW_WORKER_NAME") or socket.gethostname()
    return f"{worker}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def make_engine(url: str | None = None) -> sa.Engine:
    """A small pool for the host leases (two statements per fetch: connections are kept)."""
    if url is None:
        from harvestflow.settings import get_settings

        url = get_settings().harvest_db_url
    return sa.create_engine(url, pool_size=2, max_overflow=4, pool_pre_ping=True)


def job_lease_engine(url: str | None = None) -> sa.Engine:
    """An engine for a job's lease that keeps no connection between its statements.

    Why no pool: a job's lease is taken once, renewed every TTL / 3 (30 s) and given back once,
    while the crawl lasts hours; a pooled connection sat idle in PostgreSQL the whole time, twice
    per crawl slot (the task's and its crawler's), and 100 slots went past 200 connections.
    """
    if url is None:
        from harvestflow.settings import get_settings

        url = get_settings().harvest_db_url
    return sa.create_engine(url, poolclass=sa.pool.NullPool)


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
            f" (or for the lease to expire if it died), or stop it: harvestflow jobs stop {job_id}",
            expires_in_s=max(float(row.expires_in), 0.0),
        )

    def heartbeat(self, job_id: int, holder: str) -> bool:
        """Extend the lease; False when it is no longer ours (another crawler took over)."""
        params = {"j": job_id, "me": holder, "ttl": self.ttl_s}
        return _update(self.engine, _HEARTBEAT_JOB, params) == 1

    def release(self, job_id: int, holder: str) -> None:
        _update(self.engine, _RELEASE_JOB, {"j": job_id, "me": holder})
