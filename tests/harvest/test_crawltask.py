"""The harvest DAG's crawl task (harvest.crawltask.crawl_prepared_job, what the Airflow task
runs) on a crawl that ends unfinished: SIGTERM to the crawler mid-crawl makes the crawler write
an ``unfinished`` summary and exit 3; the task must fail (CrawlUnfinished), the job must not be
DONE, and the task's retry (the same call again) resumes the saved frontier and finishes the
job, capturing nothing twice."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
import sqlalchemy as sa

from app.demo import samplesite
from app.demo.definition import create_demo_definition
from crawler.launch import CrawlUnfinished
from harvest import pipeline as p
from harvestflow.formats.job_status import JobStatus

pytestmark = pytest.mark.services
LD = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)


@pytest.fixture
def site() -> Iterator[samplesite.SampleSite]:
    running = samplesite.start()
    yield running
    running.stop()


def fetched(crawl_log: Path) -> list[str]:
    """URLs fetched (status > 0, not a prerequisite) in the complete lines of crawl.log."""
    lines = crawl_log.read_text().split("\n")[:-1]
    return [
        f[3] for f in (ln.split() for ln in lines) if len(f) == 12 and int(f[1]) > 0 and f[4] != "P"
    ]


def job_status(hdb: sa.Engine, job_id: int) -> int:
    with hdb.connect() as conn:
        status = conn.execute(
            sa.text("SELECT status FROM jobs WHERE job_id = :j"), {"j": job_id}
        ).scalar_one()
    return int(status)


def test_unfinished_crawl_fails_the_task_and_its_retry_resumes_and_finishes_the_job(
    hdb: sa.Engine, site: samplesite.SampleSite, tmp_path: Path
) -> None:
    hid = create_demo_definition(site.port, engine=hdb)
    (job,) = p.generate_jobs(hid, LD, engine=hdb)
    spec_path = Path(p.prepare_job(job, tmp_path / "jobs", engine=hdb))
    spec = json.loads(spec_path.read_text())
    # a polite pace, so that the signal lands mid-crawl
    spec["template"].update({"min_delay_ms": 150, "max_delay_ms": 150, "delay_factor": 1.0})
    spec_path.write_text(json.dumps(spec))
    out = spec_path.parent
    crawl_log = out / "logs" / "crawl.log"

    outcome: dict[str, Any] = {}

    def task() -> None:
        try:
            outcome["brief"] = p.crawl_prepared_job(job, spec_path)
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=task, daemon=True)
    thread.start()
    deadline = time.monotonic() + 90
    while not (crawl_log.exists() and len(fetched(crawl_log)) >= 10):
        assert time.monotonic() < deadline, "the crawl did not start fetching"
        assert thread.is_alive(), f"the crawl ended before the signal: {outcome}"
        time.sleep(0.05)
    (crawler,) = [
        c
        for c in psutil.Process().children(recursive=True)
        if "crawler" in c.cmdline() and str(spec_path) in c.cmdline()
    ]
    crawler.send_signal(signal.SIGTERM)  # what a worker's shutdown or `kill` sends
    thread.join(timeout=120)
    assert not thread.is_alive()

    # the task failed, saying why; the job is not DONE and its frontier is left to the retry
    error = outcome.get("error")
    assert isinstance(error, CrawlUnfinished), outcome
    assert "unfinished" in str(error) and "resumes" in str(error)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "unfinished"
    assert job_status(hdb, job) == JobStatus.STARTED
    before = fetched(crawl_log)
    assert before, "nothing fetched before the signal"

    # the retry resumes the job from its frontier and finishes it: nothing fetched twice
    brief = p.crawl_prepared_job(job, spec_path)
    assert brief["status"] == "complete" and brief["job_id"] == job
    after = fetched(crawl_log)
    assert len(after) > len(before), "the retry fetched nothing: it did not resume"
    twice = sorted({u for u in after if after.count(u) > 1})
    assert not twice, f"captured twice: {twice}"
    assert p.record_job_results(job, engine=hdb)["status"] == "DONE"


def test_a_job_whose_last_try_ended_unfinished_is_recorded_failed(hdb, tmp_path) -> None:
    """The teardown after the last try: an ``unfinished`` summary makes the job FAILED (with
    what it fetched in the history), never DONE."""
    from tests.support.summaries import write_summary

    hid = create_demo_definition(8099, engine=hdb)
    (job,) = p.generate_jobs(hid, LD, engine=hdb)
    path = p.prepare_job(job, tmp_path, engine=hdb)
    p.mark_started(job, engine=hdb)
    write_summary(path, {"example-a.test": (3, 30, 4), "example-b.test": (0, 0, 4)}, "unfinished")
    result = p.record_job_results(job, engine=hdb)
    assert result["status"] == "FAILED" and result["history_rows"] == 2
    with hdb.connect() as conn:
        row = conn.execute(
            sa.text("SELECT status, harvest_errors FROM jobs WHERE job_id = :j"), {"j": job}
        ).one()
    assert row.status == JobStatus.FAILED and "unfinished" in row.harvest_errors
