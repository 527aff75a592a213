"""A crawl job's lease around its crawl (harvest.joblease): what it holds in PostgreSQL."""

from __future__ import annotations

import time
import types

import pytest
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


def test_a_retry_asks_for_a_dead_holder_s_lease_again_as_it_expires(
    db_engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crawler died holding the job (no heartbeat: its lease runs out in 1 s); the retry,
    whose own TTL is 60 s, waits until that expiry, not for a fixed TTL / 6 (10 s), and takes
    the job at its next question."""
    from harvest import joblease

    job = _job_row(db_engine)
    JobLeases(job_lease_engine(), ttl_s=1.0).acquire(job, "dead-worker:1:x")
    pauses: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        real_sleep(seconds)

    clock = types.SimpleNamespace(monotonic=time.monotonic, sleep=sleep)
    monkeypatch.setattr(joblease, "time", clock)  # this module's sleeps only
    with job_lease(job, ttl_s=60, wait_s=90) as holder:
        with db_engine.connect() as conn:
            leased = conn.execute(
                sa.text("SELECT holder FROM job_leases WHERE job_id = :j"), {"j": job}
            ).scalar_one()
        assert leased == holder
    assert len(pauses) == 1, pauses  # taken at the question after the expiry
    assert 0 < pauses[0] <= 1.0 + joblease.EXPIRY_MARGIN_S, pauses
