"""Host leases in the Celery broker's Redis: the rules of the ``host_leases`` table (one holder,
the delay binds every crawler, a dead holder blocks for ``hold_s``, waiters in turn), chosen by
the celery executor, and two crawler processes keeping one delay per host through it."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from crawler.broker_leases import BrokerHostLeases
from crawler.leases import POLL_S, WAITER_GRACE_S, HostLeases, open_host_leases
from harvestflow.services.redis import EmbeddedRedis
from harvestflow.settings import reset
from tests.support.crawl import crawl_side_by_side
from tests.support.platform_site import SlowSite, slow_job

DELAY = 0.4
RULES = {"poll_s": POLL_S, "grace_s": WAITER_GRACE_S}
TOLERANCE = 0.03


@pytest.fixture
def client(broker: EmbeddedRedis) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(broker.url)
    c.flushdb()
    yield c
    c.close()


def test_a_broker_lease_is_taken_by_one_crawler_and_its_delay_binds_the_next(client) -> None:
    a = BrokerHostLeases(client, "worker-a:1:x", hold_s=60, **RULES)
    b = BrokerHostLeases(client, "worker-b:2:y", hold_s=60, **RULES)
    assert a.try_take("example.test") == 0.0
    assert b.try_take("example.test") == POLL_S  # held (fetching): ask again soon
    assert a.try_take("other.test") == 0.0  # hosts are independent
    a.give_back("example.test", 30.0)
    wait = b.try_take("example.test")
    assert 25.0 < wait <= 30.0  # the delay after a's fetch binds b too
    b.give_back("example.test", 1.0)  # not b's lease: changes nothing
    assert b.try_take("example.test") > 25.0
    # a crawler that dies holding a host blocks it for hold_s, then the lease expires
    dead = BrokerHostLeases(client, "dead:3:z", hold_s=0.2, **RULES)
    assert dead.try_take("third.test") == 0.0
    assert b.try_take("third.test") == POLL_S
    time.sleep(0.3)
    assert b.try_take("third.test") == 0.0


def test_crawlers_waiting_for_a_host_take_its_broker_lease_in_turn(client) -> None:
    a = BrokerHostLeases(client, "worker-a:1:x", hold_s=60, **RULES)
    b = BrokerHostLeases(client, "worker-b:2:y", hold_s=60, **RULES)
    assert a.try_take("example.test") == 0.0
    assert b.try_take("example.test") == POLL_S  # held: b waits, with a ticket
    a.give_back("example.test", 0.0)
    assert a.try_take("example.test") == POLL_S  # free, but b's turn
    assert b.try_take("example.test") == 0.0
    b.give_back("example.test", 0.0)
    assert b.try_take("example.test") == POLL_S  # a waits since before b asked again
    assert a.try_take("example.test") == 0.0
    a.give_back("example.test", 0.0)
    # b stops asking (its crawler died): once its deadline passed, its turn is lost
    client.hset("hf:hostlease:{example.test}:qx", "worker-b:2:y", 0)
    assert a.try_take("example.test") == 0.0
    # nothing is kept for ever: every key of the host expires
    assert all(client.pttl(k) > 0 for k in client.keys("hf:hostlease:*"))


def test_the_celery_executor_puts_host_leases_in_the_broker(
    broker: EmbeddedRedis, monkeypatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_AIRFLOW__EXECUTOR", "celery")
    monkeypatch.setenv("HARVESTFLOW_BROKER__PORT", str(broker.port))
    reset()
    try:
        leases = open_host_leases(60.0)
        assert isinstance(leases, BrokerHostLeases)
        leases.close()
        monkeypatch.setenv("HARVESTFLOW_AIRFLOW__EXECUTOR", "local")
        reset()
        leases = open_host_leases(60.0)
        assert isinstance(leases, HostLeases)
        leases.close()
    finally:
        reset()


def _script_calls(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def test_two_crawler_processes_on_one_host_keep_its_delay_through_the_broker(
    broker: EmbeddedRedis, client, db_engine, tmp_path: Path, monkeypatch
) -> None:
    """Two jobs on one host with the celery executor: the leases are in Redis (none in the
    host_leases table) and the server sees the delay between any two requests."""
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__HOST_LEASES", "true")
    monkeypatch.setenv("HARVESTFLOW_AIRFLOW__EXECUTOR", "celery")
    monkeypatch.setenv("HARVESTFLOW_BROKER__PORT", str(broker.port))
    reset()
    calls_before = _script_calls(client)
    site = SlowSite(pages=5, page_s=0.02)
    try:
        delay = {"min_delay_ms": int(DELAY * 1000), "max_delay_ms": int(DELAY * 1000)}
        jobs = {
            name: {**slow_job(site, job_id, delay), "user_agent": f"hfjob{name}/1.0"}
            for job_id, name in ((1, "A"), (2, "B"))
        }
        results = crawl_side_by_side(jobs, tmp_path)
    finally:
        site.stop()
        reset()
    assert {r.summary["status"] for r in results.values()} == {"complete"}
    reqs = sorted(site.requests(), key=lambda r: r.started)
    assert len(reqs) == 12  # each job fetched / and the 5 pages
    gaps = [nxt.started - prev.ended for prev, nxt in itertools.pairwise(reqs)]
    assert min(gaps) >= DELAY - TOLERANCE, gaps
    # every fetch took and gave back its lease in the broker …
    assert _script_calls(client) - calls_before >= 2 * len(reqs)
    with db_engine.connect() as conn:  # … and not in the harvest database
        assert conn.exec_driver_sql("SELECT count(*) FROM host_leases").scalar_one() == 0


def test_a_crawlers_broker_leases_hold_one_connection_whatever_its_threads(broker) -> None:
    """The crawler asks for leases from a pool of threads: they share one connection to the
    broker (not one each), so 100 crawl slots are 100 clients of Redis."""
    import threading

    watch = redis.Redis.from_url(broker.url)
    before = len(watch.client_list())
    leases = BrokerHostLeases.from_url(broker.url, "worker-c:4:w", 60, **RULES)
    start = threading.Barrier(10)

    def crawl(n: int) -> None:
        start.wait()
        for i in range(20):
            host = f"h{n}-{i}.test"
            assert leases.try_take(host) == 0.0
            leases.give_back(host, 0.0)

    threads = [threading.Thread(target=crawl, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(watch.client_list()) - before == 1
    finally:
        leases.close()
        watch.close()
