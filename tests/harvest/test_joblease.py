"""A crawl job's lease around its crawl (harvest.joblease): what it holds in PostgreSQL."""

from __future__ import annotations

import time

import sqlalchemy as sa

from crawler.lease_tables import JobLeases, job_lease_engine
from harvest.joblease import job_lease
from tests.support.crawl import _job_row


def _connections(engine: sa.Engine) -> int:
    """Connections to the harvest database, this query's own left out."""
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            ).scalar_one()
        )


def _connections_settled(engine: sa.Engine, expected: int, within_s: float = 10.0) -> int:
    """Connections once closed ones are gone: a backend leaves pg_stat_activity only when its
    process has exited, a moment after the client closed it (CI saw the heartbeat's closed
    connection still listed). Returns as soon as the count is ``expected``, else the last count."""
    deadline = time.monotonic() + within_s
    count = _connections(engine)
    while count != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        count = _connections(engine)
    return count


def test_a_held_job_lease_keeps_no_connection_open(db_engine: sa.Engine) -> None:
    """The lease lasts the whole crawl (hours) with a statement every 30 s: a connection kept
    for it sat idle per crawl slot, and 100 slots went past PostgreSQL's 200."""
    job = _job_row(db_engine)
    before = _connections(db_engine)
    with job_lease(job, ttl_s=60) as holder:
        assert _connections_settled(db_engine, before) == before
        beats = JobLeases(job_lease_engine(), ttl_s=60)  # the crawler's heartbeats: the same
        assert beats.heartbeat(job, holder)
        assert _connections_settled(db_engine, before) == before
    with db_engine.connect() as conn:  # given back at the end
        assert conn.execute(sa.text("SELECT count(*) FROM job_leases")).scalar_one() == 0
