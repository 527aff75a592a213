"""Leases shared by every crawler through the harvest DB: one politeness per host across
crawler processes (measured at the test server), and one crawler per job."""

from __future__ import annotations

import itertools
import threading

import pytest
import sqlalchemy as sa

from crawler.leases import POLL_S, HostLeases, JobLeases, LeaseHeld
from tests.support.crawl import _job_row, crawl_side_by_side, make_job, run_crawl
from tests.support.platform_site import HOST, SlowSite, slow_job

DELAY = 0.4
TOLERANCE = 0.03


def test_a_host_lease_is_taken_by_one_crawler_and_its_delay_binds_the_next(db_engine) -> None:
    a = HostLeases(db_engine, "worker-a:1:x", hold_s=60)
    b = HostLeases(db_engine, "worker-b:2:y", hold_s=60)
    assert a.try_take("example.test") == 0.0
    assert b.try_take("example.test") == POLL_S  # held (fetching): ask again soon
    assert a.try_take("other.test") == 0.0  # hosts are independent
    a.give_back("example.test", 30.0)
    wait = b.try_take("example.test")
    assert 25.0 < wait <= 30.0  # the delay after a's fetch binds b too
    b.give_back("example.test", 1.0)  # not b's lease: changes nothing
    assert b.try_take("example.test") > 25.0
    with db_engine.begin() as conn:  # a crawler that died holding a host blocks it for hold_s
        conn.execute(
            sa.text(
                "UPDATE host_leases SET next_fetch_at = now() - interval '1 s', holder = 'dead',"
                " held_until = now() - interval '1 s' WHERE host = 'example.test'"
            )
        )
    assert b.try_take("example.test") == 0.0


def test_a_leased_job_refuses_a_second_crawler_until_its_heartbeats_stop(db_engine) -> None:
    job = _job_row(db_engine)
    leases = JobLeases(db_engine, ttl_s=90)
    leases.acquire(job, "worker-a:1:x")
    leases.acquire(job, "worker-a:1:x")  # the holder itself may take it again
    with pytest.raises(LeaseHeld, match=f"job {job} is being crawled by worker-a:1:x"):
        leases.acquire(job, "worker-b:2:y")
    assert leases.heartbeat(job, "worker-a:1:x")
    # worker a is killed: no heartbeat; once the lease has expired, b takes the job over
    with db_engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE job_leases SET expires_at = now() - interval '1 s' WHERE job_id = :j"),
            {"j": job},
        )
    leases.acquire(job, "worker-b:2:y")
    assert not leases.heartbeat(job, "worker-a:1:x")  # a, back, learns it lost the job
    with pytest.raises(LeaseHeld, match="worker-b:2:y"):
        leases.acquire(job, "worker-a:1:x")
    leases.release(job, "worker-a:1:x")  # not a's: nothing happens
    assert leases.heartbeat(job, "worker-b:2:y")
    leases.release(job, "worker-b:2:y")
    leases.acquire(job, "worker-a:1:x")


def test_taking_a_job_lease_deletes_the_rows_of_leases_long_expired(db_engine) -> None:
    """A killed crawler's row stays (nobody released it); once expired for more than a TTL it
    is deleted when any job's lease is taken, while a lease expired only just now is kept."""
    dead = _job_row(db_engine)
    with db_engine.begin() as conn:
        recent, job = (
            int(
                conn.execute(
                    sa.text(
                        "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                        " template_name, template, seedlist)"
                        " VALUES (1, 1, :i, 1, 'CIBLEE', 't', '{}', '') RETURNING job_id"
                    ),
                    {"i": i},
                ).scalar_one()
            )
            for i in (1, 2)
        )
    leases = JobLeases(db_engine, ttl_s=60)
    leases.acquire(dead, "worker-a:1:x")
    leases.acquire(recent, "worker-a:1:y")
    with db_engine.begin() as conn:
        for j, ago in ((dead, 61), (recent, 30)):
            conn.execute(
                sa.text(
                    "UPDATE job_leases SET expires_at = now() - make_interval(secs => :s)"
                    " WHERE job_id = :j"
                ),
                {"j": j, "s": ago},
            )
    leases.acquire(job, "worker-b:2:z")
    with db_engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT job_id FROM job_leases")).scalars().all()
    assert sorted(rows) == sorted([recent, job])
    assert leases.heartbeat(recent, "worker-a:1:y")  # its holder, back in time, keeps it


def test_two_crawler_processes_keep_one_delay_per_host(
    db_engine, fresh_site, tmp_path, monkeypatch
):
    """Two jobs crawl the same loopback host at once: the server sees one politeness."""
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__HOST_LEASES", "true")
    site = fresh_site
    template = {
        "delay_factor": 0.0,
        "min_delay_ms": int(DELAY * 1000),
        "max_delay_ms": int(DELAY * 1000),
        "connections_per_host": 1,
        "max_hops": 1,
        "obey_robots": False,
    }
    seeds = [site.url("www.example-a.test", "/")]
    results = {}

    def crawl(name: str, job_id: int) -> None:
        job = make_job(site, seeds, template, job_id=job_id)
        results[name] = run_crawl(job, tmp_path / name, timeout=300)

    threads = [threading.Thread(target=crawl, args=(n, i)) for i, n in ((1, "a"), (2, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {r.summary["status"] for r in results.values()} == {"complete"}
    reqs = sorted(site.served("www.example-a.test"), key=lambda r: r.started)
    fetched = [
        [f for f in r.log_fields() if "//www.example-a.test" in f[3] and int(f[1]) > 0]
        for r in results.values()
    ]
    assert min(len(f) for f in fetched) >= 3  # both crawls fetched from the host
    assert len(reqs) >= sum(len(f) for f in fetched)
    gaps = [nxt.started - prev.ended for prev, nxt in itertools.pairwise(reqs)]
    assert min(gaps) >= DELAY - TOLERANCE, gaps
    # the wait for the other crawler's lease is in crawl.log's annotations and the host report
    annotated = [f for r in results.values() for f in r.log_fields() if "leaseWait:" in f[11]]
    assert annotated
    reports = [(r.out / "reports" / "host-leases-report.txt").read_text() for r in results.values()]
    assert any(
        line.startswith("www.example-a.test ") for rep in reports for line in rep.splitlines()
    )


def test_crawlers_waiting_for_a_host_take_its_lease_in_turn(db_engine) -> None:
    """The crawler that just gave a host back does not take it again while another waits: the
    oldest live waiter's ticket goes first; a waiter gone silent loses its turn."""
    a = HostLeases(db_engine, "worker-a:1:x", hold_s=60)
    b = HostLeases(db_engine, "worker-b:2:y", hold_s=60)
    assert a.try_take("example.test") == 0.0
    assert b.try_take("example.test") == POLL_S  # held: b waits, with a ticket
    a.give_back("example.test", 0.0)
    assert a.try_take("example.test") == POLL_S  # free, but b's turn
    assert b.try_take("example.test") == 0.0
    b.give_back("example.test", 0.0)
    assert b.try_take("example.test") == POLL_S  # a waits since before b asked again
    assert a.try_take("example.test") == 0.0
    a.give_back("example.test", 0.0)
    with db_engine.begin() as conn:  # b stops asking (its crawler died): its turn expires
        conn.execute(sa.text("UPDATE host_lease_waiters SET expires_at = now() - interval '1 s'"))
    assert a.try_take("example.test") == 0.0


def test_two_crawler_processes_on_one_host_fetch_in_turn_and_keep_its_delay(
    db_engine, tmp_path, monkeypatch
) -> None:
    """Two jobs on one host alternate (no run of more than 2 fetches by one job while the other
    has fetches waiting), and the server still sees the delay between any two requests."""
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__HOST_LEASES", "true")
    site = SlowSite(pages=10, page_s=0.02)
    try:
        delay = {"min_delay_ms": int(DELAY * 1000), "max_delay_ms": int(DELAY * 1000)}
        jobs = {
            name: {**slow_job(site, job_id, delay), "user_agent": f"hfjob{name}/1.0"}
            for job_id, name in ((1, "A"), (2, "B"))
        }
        results = crawl_side_by_side(jobs, tmp_path)
    finally:
        site.stop()
    assert {r.summary["status"] for r in results.values()} == {"complete"}
    reqs = sorted(site.requests(), key=lambda r: r.started)
    who = ["A" if "hfjobA" in r.agent else "B" for r in reqs]
    assert who.count("A") == who.count("B") == 11  # each job fetched / and the 10 pages
    gaps = [nxt.started - prev.ended for prev, nxt in itertools.pairwise(reqs)]
    assert min(gaps) >= DELAY - TOLERANCE, gaps
    # while both jobs have fetches left: from the later job's first to the earlier one's last
    both = who[
        max(who.index("A"), who.index("B")) : min(
            len(who) - who[::-1].index("A"), len(who) - who[::-1].index("B")
        )
    ]
    runs = [len(list(group)) for _, group in itertools.groupby(both)]
    assert max(runs) <= 2, "".join(who)


def test_a_url_refused_for_a_quota_takes_no_host_lease(db_engine, tmp_path, monkeypatch) -> None:
    """Refusals decided before fetching (here the domain's object quota) take no lease of the
    host: the leases taken (counted by a trigger on host_leases) are the fetches the server
    saw, not one more per refused URL."""
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__HOST_LEASES", "true")
    with db_engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE lease_takes (holder text)"))
        conn.execute(
            sa.text(
                "CREATE FUNCTION note_take() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF NEW.holder IS NOT NULL THEN INSERT INTO lease_takes VALUES (NEW.holder);"
                " END IF; RETURN NEW; END $$"
            )
        )
        conn.execute(
            sa.text(
                "CREATE TRIGGER note_take AFTER INSERT OR UPDATE ON host_leases"
                " FOR EACH ROW EXECUTE FUNCTION note_take()"
            )
        )
    site = SlowSite(pages=10, page_s=0.02)
    try:
        job = slow_job(site, 3, {"min_delay_ms": 300, "max_delay_ms": 300})
        domain = HOST.removeprefix("www.")
        job["domains"] = [{"domain": domain, "config_id": 5, "max_objects": 3, "max_bytes": -1}]
        result = run_crawl(job, tmp_path / "job", timeout=300)
    finally:
        site.stop()
    assert result.summary["status"] == "complete"
    refused = [f for f in result.log_fields() if f[1] == "-5003"]
    assert len(refused) >= 5, result.crawl_log
    with db_engine.connect() as conn:
        takes = conn.execute(sa.text("SELECT count(*) FROM lease_takes")).scalar_one()
    assert takes == len(site.requests()) == 3
