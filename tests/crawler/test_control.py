"""Live control of a real crawl through the harvest database: pause, resume, filter, limits
and stop, asked through the CLI and the library while a crawler child process crawls a slow
loopback site with an endless trap.

What is measured at the test server (which requests it received, and when), never our speed:
waits are bounded loops on what the server or crawl.log shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.support.control_site import (
    PAUSE_S,
    SlowSite,
    checked_actions_log,
    cli,
    crawl_log_lines,
    crawler_process,
    ends_cleanly,
    prepared_job,
    stop_from_cli,
    wait_until,
)
from tests.support.crawl import REPO

pytestmark = pytest.mark.services


@pytest.fixture
def slow_site() -> Iterator[SlowSite]:
    s = SlowSite()
    yield s
    s.stop()


def test_pause_resume_filter_limits_stop_a_running_crawl(db_engine, slow_site, tmp_path):
    from harvest.control import request
    from harvest.results import record_job_results
    from harvestflow.job_actions import wait_for

    job_id, job_json = prepared_job(db_engine, slow_site, tmp_path)
    out = job_json.parent
    with (tmp_path / "crawler.out").open("w") as log_fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawler", "--job", str(job_json), "--out", str(out),
             "--progress-interval", "1"],
            stdout=log_fh, stderr=subprocess.STDOUT, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    try:
        wait_until("the crawl fetching", lambda: slow_site.count() >= 6)

        # pause: applied once the in-flight fetches are done; then no request for PAUSE_S
        done = cli("pause", str(job_id), "--user", "alice", "--wait", "90")
        print("pause:", done.stdout, done.stderr)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "applied by the crawler" in done.stdout and "paused" in done.stdout
        before = slow_site.count()
        time.sleep(PAUSE_S)
        assert slow_site.count() == before, "the server got requests while the crawl was paused"
        assert proc.poll() is None, "the paused crawler process ended"

        # resume: the server sees requests again
        resumed = wait_for(request(job_id, "resume", {}, "alice"), 90)
        assert resumed is not None and resumed.state == "applied", resumed
        wait_until("requests after resume", lambda: slow_site.count() > before + 2)

        # filter: the trap's queued URLs come out of the queue rejected, with the filter named
        trap_args = {"kind": "regex", "pattern": "/t/", "name": "trap", "save": "definition"}
        filtered = wait_for(request(job_id, "filter", trap_args, "bob"), 90)
        assert filtered is not None and filtered.state == "applied", filtered
        assert "filter trap" in (filtered.message or "")

        def rejected() -> list[list[str]]:
            return [f for f in crawl_log_lines(out) if f[1] == "-5001" and "filter:trap" in f[-1]]

        wait_until("queued trap URLs rejected in crawl.log", lambda: len(rejected()) >= 2)
        assert all("/t/" in f[3] for f in rejected())
        traps_fetched = slow_site.count(lambda p: p.startswith("/t/"))
        pages = slow_site.count(lambda p: p.startswith("/p/"))
        wait_until("more pages after the filter", lambda: slow_site.count(
            lambda p: p.startswith("/p/")) >= pages + 3)  # fmt: skip
        assert slow_site.count(lambda p: p.startswith("/t/")) == traps_fetched
        with db_engine.connect() as conn:
            saved = conn.execute(sa.text("SELECT crawlertraps FROM harvestdefinitions")).scalar()
        assert "/t/" in saved  # the next run of the definition starts with it

        new_limits = {"max_objects": 5000, "max_time_s": 3600}
        limits = wait_for(request(job_id, "limits", new_limits, "bob"), 90)
        assert limits is not None and limits.state == "applied"
        assert "max objects 5000" in (limits.message or "")
        assert "max running time 3600s" in (limits.message or "")

        # stop: a clean end, stopped by operator
        stop_from_cli(job_id, proc, tmp_path / "crawler.out")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "stopped"
    assert summary["domains"]["example-a.test"]["stop_reason"] == 7  # URLs were left queued
    report = (out / "reports" / "crawl-report.txt").read_text()
    assert "Stopped by operator" in report, report
    progress = (out / "logs" / "progress-statistics.log").read_text().splitlines()
    assert progress[-1].endswith("CRAWL ENDED - Stopped by operator")

    result = record_job_results(job_id, engine=db_engine)
    assert result["status"] == "DONE", result
    with db_engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT action, requested_by, state, applied_at FROM job_actions"
                " WHERE job_id = :j ORDER BY action_id"
            ),
            {"j": job_id},
        ).all()
        history = conn.execute(
            sa.text("SELECT stopreason FROM historyinfo WHERE job_id = :j"), {"j": job_id}
        ).scalars().all()  # fmt: skip
    assert [(r.action, r.requested_by, r.state) for r in rows] == [
        ("pause", "alice", "applied"),
        ("resume", "alice", "applied"),
        ("filter", "bob", "applied"),
        ("limits", "bob", "applied"),
        ("stop", "carol", "applied"),
    ]
    assert all(r.applied_at is not None for r in rows)
    assert 7 in history

    # every WARC passes warcio check; the metadata WARC carries the actions with who and when
    lines = checked_actions_log(out)
    assert [(x["action"], x["requested_by"]) for x in lines] == [
        (r.action, r.requested_by) for r in rows
    ]
    assert all(x["requested_at"] and x["at"] for x in lines)


def test_a_partitioned_job_is_paused_filtered_limited_and_stopped_in_every_process(
    db_engine, slow_site, tmp_path
):
    """The same actions on a job crawled by two processes (one per domain): the parent relays
    each action to both, and marks it applied once both have applied it."""
    from harvest.control import request
    from harvest.results import record_job_results
    from harvestflow.job_actions import wait_for

    job_id, job_json = prepared_job(db_engine, slow_site, tmp_path)
    spec = json.loads(job_json.read_text())
    # two limited domains (the demo's configurations): one partition each
    spec["seeds"] = [f"http://www.example-a.test:{slow_site.port}/",
                     f"http://example-b.test:{slow_site.port}/"]  # fmt: skip
    job_json.write_text(json.dumps(spec))
    out = job_json.parent
    with (tmp_path / "crawler.out").open("w") as log_fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawler", "--job", str(job_json), "--out", str(out),
             "--processes", "2", "--progress-interval", "1"],
            stdout=log_fh, stderr=subprocess.STDOUT, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip

    def hosts_seen() -> set[str]:
        with slow_site.lock:
            return set(slow_site.hosts)

    def part_log(i: int) -> list[list[str]]:
        return crawl_log_lines(out / "state" / f"part-{i}")

    try:
        wait_until("both processes fetching", lambda: slow_site.count() >= 8
                   and {"www.example-a.test", "example-b.test"} <= hosts_seen())  # fmt: skip

        done = cli("pause", str(job_id), "--user", "alice", "--wait", "90")
        print("pause:", done.stdout, done.stderr)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "applied by the crawler" in done.stdout
        assert "paused: frontier saved" in done.stdout  # once if both said the same, else p0/p1
        for i in (0, 1):  # each process paused, and said so in its own log
            log = out / "state" / f"part-{i}" / "logs" / "operator-actions.log"
            answers = [json.loads(line) for line in log.read_text().splitlines()]
            assert [(a["action"], a["state"]) for a in answers] == [("pause", "applied")]
        before = slow_site.count()
        time.sleep(PAUSE_S)
        assert slow_site.count() == before, "the server got requests while the job was paused"
        assert proc.poll() is None, "the paused crawler ended"

        resumed = wait_for(request(job_id, "resume", {}, "alice"), 90)
        assert resumed is not None and resumed.state == "applied", resumed
        wait_until("requests after resume", lambda: slow_site.count() > before + 4)

        trap_args = {"kind": "regex", "pattern": "/t/", "name": "trap"}
        filtered = wait_for(request(job_id, "filter", trap_args, "bob"), 90)
        assert filtered is not None and filtered.state == "applied", filtered

        def rejected(i: int) -> list[list[str]]:
            return [f for f in part_log(i) if f[1] == "-5001" and "filter:trap" in f[-1]]

        # both processes reject their queued trap URLs
        wait_until("trap URLs rejected in both processes",
                   lambda: len(rejected(0)) >= 1 and len(rejected(1)) >= 1)  # fmt: skip
        traps_fetched = slow_site.count(lambda p: p.startswith("/t/"))
        pages = slow_site.count(lambda p: p.startswith("/p/"))
        wait_until("more pages after the filter", lambda: slow_site.count(
            lambda p: p.startswith("/p/")) >= pages + 4)  # fmt: skip
        assert slow_site.count(lambda p: p.startswith("/t/")) == traps_fetched

        # job-level limits would make every domain limited: URLs would change process
        moved = wait_for(request(job_id, "limits", {"max_objects": 5000}, "bob"), 90)
        assert moved is not None and moved.state == "refused", moved
        assert "would move URLs between the processes" in (moved.message or "")
        timed = wait_for(request(job_id, "limits", {"max_time_s": 3600}, "bob"), 90)
        assert timed is not None and timed.state == "applied", timed
        assert "max running time 3600s" in (timed.message or "")

        stop_from_cli(job_id, proc, tmp_path / "crawler.out")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "stopped" and summary["processes"] == 2
    assert "Stopped by operator" in (out / "reports" / "crawl-report.txt").read_text()
    assert record_job_results(job_id, engine=db_engine)["status"] == "DONE"
    with db_engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT action, requested_by, state FROM job_actions WHERE job_id = :j"
                    " ORDER BY action_id"), {"j": job_id},
        ).all()  # fmt: skip
    assert [tuple(r) for r in rows] == [
        ("pause", "alice", "applied"),
        ("resume", "alice", "applied"),
        ("filter", "bob", "applied"),
        ("limits", "bob", "refused"),
        ("limits", "bob", "applied"),
        ("stop", "carol", "applied"),
    ]
    logged = checked_actions_log(out)
    assert [(x["action"], x["requested_by"], x["state"]) for x in logged] == [
        tuple(r) for r in rows
    ]


def test_an_object_limit_below_what_the_crawl_would_fetch_stops_it_there(
    db_engine, slow_site, tmp_path
):
    """`harvestflow jobs limits --max-objects N` with N below what the endless crawl would
    fetch: it stops at N with stop reason 1 (object limit) in summary.json, the URLs left are
    refused in crawl.log with -5003 and Heritrix's quota annotation, and the report says the
    crawl finished."""
    from harvest.control import request
    from harvest.results import record_job_results
    from harvestflow.job_actions import wait_for

    job_id, job_json = prepared_job(db_engine, slow_site, tmp_path)
    out = job_json.parent

    def pages_logged() -> int:
        return sum(1 for f in crawl_log_lines(out) if f[1] == "200" and "robots" not in f[3])

    with crawler_process(job_json, out, tmp_path / "crawler.out") as proc:
        wait_until("the crawl fetching", lambda: slow_site.count() >= 4)
        # paused, so that the count the limit is set from is the count it stops at
        paused = wait_for(request(job_id, "pause", {}, "bob"), 90)
        assert paused is not None and paused.state == "applied", paused
        limit = pages_logged() + 5
        limited = cli("limits", str(job_id), "--max-objects", str(limit), "--user", "bob",
                      "--wait", "90")  # fmt: skip
        assert limited.returncode == 0, limited.stdout + limited.stderr
        assert f"max objects {limit}" in limited.stdout
        resumed = wait_for(request(job_id, "resume", {}, "bob"), 90)
        assert resumed is not None and resumed.state == "applied", resumed
        ends_cleanly(proc, tmp_path / "crawler.out")  # the trap is endless: the limit ends it

    summary = json.loads((out / "summary.json").read_text())
    domain = summary["domains"]["example-a.test"]
    assert summary["status"] == "complete"
    assert (domain["objects"], domain["stop_reason"]) == (limit, 1), domain  # OBJECT_LIMIT
    assert pages_logged() == limit
    assert slow_site.count(lambda p: p != "/robots.txt") == limit  # the server agrees
    refused = [f for f in crawl_log_lines(out) if f[1] == "-5003"]
    assert refused and all(f[-1] == "Q:groupMaxFetchSuccesses" for f in refused), refused[:3]
    report = (out / "reports" / "crawl-report.txt").read_text()
    assert "crawl status: Finished\n" in report, report
    assert record_job_results(job_id, engine=db_engine)["status"] == "DONE"
    with db_engine.connect() as conn:
        reasons = conn.execute(
            sa.text("SELECT stopreason FROM historyinfo WHERE job_id = :j AND objectcount > 0"),
            {"j": job_id},
        ).scalars().all()  # fmt: skip
    assert reasons == [1]


def test_an_absurd_time_limit_is_refused_and_the_crawl_keeps_its_time_limit(
    db_engine, slow_site, tmp_path
):
    """A limits action with max_time_s 10^400: refused with a clear answer, and nothing
    changed — the old crawler cancelled the crawl's timer before failing to set the new one,
    so this endless crawl never ended. Inserted in job_actions directly: the crawler reads a
    table others write and must hold whatever a requester let through."""
    from harvestflow.job_actions import insert_action, wait_for

    job_id, job_json = prepared_job(db_engine, slow_site, tmp_path)
    spec = json.loads(job_json.read_text())
    spec["max_running_time_s"] = 15
    job_json.write_text(json.dumps(spec))
    out = job_json.parent
    with crawler_process(job_json, out, tmp_path / "crawler.out") as proc:
        wait_until("the crawl fetching", lambda: slow_site.count() >= 3)
        with db_engine.begin() as conn:
            action = insert_action(conn, job_id, "limits", {"max_time_s": 10**400}, "mallory")
        answer = wait_for(action, 90)
        assert answer is not None and answer.state == "refused", answer
        message = answer.message or ""
        assert "max_time_s a number of 401 digits" in message and "no limit" in message, answer
        assert len(message) < 200
        ends_cleanly(proc, tmp_path / "crawler.out")  # the job's own 15 s limit ends it
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "time_limit"
    assert summary["domains"]["example-a.test"]["stop_reason"] == 6  # TIME_LIMIT
    assert (
        "crawl status: Finished - Timelimit hit"
        in (out / "reports" / "crawl-report.txt").read_text()
    )
