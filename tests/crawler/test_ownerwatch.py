"""One crawler per job across workers: the crawl task's job lease, renewed by the crawler itself.
A second start on a leased job refuses; SIGKILL of the task and its crawler stops the heartbeats,
and once the lease has expired another worker takes it and resumes the job in the same directory,
capturing nothing twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from crawler.launch import crawl_in_subprocess
from crawler.leases import JobLeases, LeaseHeld
from harvest.joblease import job_lease
from tests.support.crawl import REPO, _job_row, fetched, make_job

TTL = 6.0

# what a crawl task does on a worker: take the lease, run the crawler (which renews it)
TASK = """
import sys
from pathlib import Path
from crawler.launch import crawl_in_subprocess
from harvest.joblease import job_lease
with job_lease(int(sys.argv[1]), ttl_s=float(sys.argv[3])):
    crawl_in_subprocess(Path(sys.argv[2]), Path(sys.argv[2]).parent / "out")
"""


def _lease(db_engine, job: int):
    with db_engine.connect() as conn:
        return conn.execute(
            sa.text(
                "SELECT holder, heartbeat_at, expires_at < clock_timestamp() AS expired"
                " FROM job_leases WHERE job_id = :j"
            ),
            {"j": job},
        ).first()


def _wait(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_killed_worker_s_job_is_taken_over_after_its_heartbeats_stop(
    db_engine, site, tmp_path
) -> None:
    job_id = _job_row(db_engine)
    template = {
        "min_delay_ms": 150,
        "max_delay_ms": 150,
        "delay_factor": 1.0,
        "connections_per_host": 1,
    }
    seeds = [site.url("www.example-a.test", "/"), site.url("example-b.test", "/")]
    spec = tmp_path / "job" / "job.json"
    spec.parent.mkdir()
    spec.write_text(json.dumps(make_job(site, seeds, template, job_id=job_id)))
    out = spec.parent / "out"
    log = out / "logs" / "crawl.log"
    worker_a = subprocess.Popen(
        [sys.executable, "-c", TASK, str(job_id), str(spec), str(TTL)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait(lambda: log.exists() and len(fetched(log.read_text().splitlines())) >= 5, "a crawl")
        first = _lease(db_engine, job_id)
        assert first is not None and not first.expired
        # the crawler itself renews the lease while it runs
        _wait(lambda: _lease(db_engine, job_id).heartbeat_at > first.heartbeat_at, "a heartbeat")
        # worker b (or a restarted worker a) must not start a second crawler on the job
        with (
            pytest.raises(LeaseHeld, match=f"job {job_id} is being crawled by"),
            job_lease(job_id, ttl_s=TTL),
        ):
            raise AssertionError("a second crawler was allowed")
    finally:
        os.killpg(worker_a.pid, signal.SIGKILL)  # the task and its crawler, as a lost machine
        worker_a.wait()
    before = fetched(log.read_text().split("\n")[:-1])
    assert not (out / "summary.json").exists(), "killed too late to prove a take-over"
    # the retry on another worker asks for the lease until the dead crawler's has expired
    with job_lease(job_id, ttl_s=TTL, wait_s=TTL * 20) as holder:
        assert _lease(db_engine, job_id).holder == holder
        summary = crawl_in_subprocess(spec, out)
    assert summary.status == "complete"
    assert _lease(db_engine, job_id) is None  # released at the end
    after = fetched(log.read_text().splitlines())[len(before) :]
    assert after and not set(before) & set(after), "captured twice after the take-over"
    warcs = sorted(str(p) for p in (out / "warcs").glob("*.warc.gz"))
    check = subprocess.run(
        [str(REPO / ".venv/bin/warcio"), "check", *warcs], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout
    assert JobLeases(db_engine).heartbeat(job_id, holder) is False


def test_a_crawler_that_lost_its_job_lease_stops(db_engine, site, tmp_path) -> None:
    """A crawler cut off from the database long enough for another worker to take its job
    learns it at its next heartbeat and stops instead of crawling on beside the new one."""
    job_id = _job_row(db_engine)
    template = {"min_delay_ms": 300, "max_delay_ms": 300, "connections_per_host": 1}
    seeds = [site.url("www.example-a.test", "/"), site.url("example-b.test", "/")]
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(make_job(site, seeds, template, job_id=job_id)))
    out = tmp_path / "out"
    log = out / "logs" / "crawl.log"
    task = subprocess.Popen(
        [sys.executable, "-c", TASK, str(job_id), str(spec), "3"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _wait(lambda: log.exists() and len(fetched(log.read_text().splitlines())) >= 2, "a crawl")
        with db_engine.begin() as conn:  # another worker took the job over
            conn.execute(
                sa.text("UPDATE job_leases SET holder = 'worker-b:9:z' WHERE job_id = :j"),
                {"j": job_id},
            )
        _, err = task.communicate(timeout=120)
        assert task.returncode != 0 and "lease was lost to another crawler mid-crawl" in err
    finally:
        if task.poll() is None:
            os.killpg(task.pid, signal.SIGKILL)
            task.wait()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] != "complete", summary
    crawler_log = (out / "logs" / "crawler.log").read_text()
    assert f"job {job_id}: lease lost to another crawler; stopping" in crawler_log
    assert _lease(db_engine, job_id).holder == "worker-b:9:z"  # the new holder's lease stays
