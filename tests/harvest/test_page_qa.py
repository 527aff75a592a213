"""The QA pass's scores read back from what harvest keeps (harvest.page_qa), on a real harvest
database: two runs of one definition whose stored QA reports were written by the crawler's
report writer; the crawl task's log summary; the day's per-definition figures with the
previous run and a drop flagged (qa.page_scores, what daily_qa_stats runs)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from harvest.page_qa import flagged_jobs, jobs_qa, latest_scores, log_summary, previous_run
from harvestflow.contracts.jobspec import JobSpec
from qa import page_scores
from qa.inputs import JobInfo
from tests.support.qa_jobs import RUNS, TEMPLATE, report_files, seed_qa_jobs

pytestmark = pytest.mark.services


def test_jobs_qa_and_the_runs_flagged_below_their_share(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    seeded = seed_qa_jobs(db_engine, tmp_path)
    jobs = seeded["jobs"]
    with db_engine.connect() as conn:
        found = jobs_qa(conn, jobs.values())
        assert found[jobs[1]].summary.median_score == 95.0 and found[jobs[1]].summary.below == 0
        assert found[jobs[2]].summary.below == 2 and found[jobs[2]].summary.flagged
        flagged = [j.job_id for j in flagged_jobs(conn)]
        assert flagged == [jobs[3], jobs[2]]  # newest first; run 1 is fine
        assert [j.job_id for j in previous_run(conn, seeded["harvest_id"], 2)] == [jobs[1]]
        assert previous_run(conn, seeded["harvest_id"], 1) == []


def test_a_domains_pages_latest_scores_worst_first(db_engine: sa.Engine, tmp_path: Path) -> None:
    seeded = seed_qa_jobs(db_engine, tmp_path)
    with db_engine.connect() as conn:
        scores = latest_scores(conn, ["qa.test"])
    assert [(s["page"], s["score"], s["job_id"], s["below"]) for s in scores] == [
        ("http://qa.test/a.html", 40.0, seeded["jobs"][2], True),
        ("http://www.qa.test/", 60.0, seeded["jobs"][2], True),
        ("http://qa.test/", 99.0, seeded["jobs"][2], False),
    ]  # other.test's page left out


def _spec(template: dict[str, Any]) -> JobSpec:
    return JobSpec.from_dict({"job_id": 30, "seeds": ["http://qa.test/"], "template": template})


def test_the_crawl_task_log_ends_with_the_qa_summary_and_says_when_the_run_fell_below(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    job_dir = tmp_path / "job"
    report_files(job_dir, RUNS[2])
    _spec(TEMPLATE).write(job_dir / "job.json")
    logger = logging.getLogger("task")
    with caplog.at_level(logging.INFO, logger="task"):
        summary = log_summary(job_dir, logger)
    assert summary is not None and summary.flagged
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert messages[0] == (
        "WARNING",
        "QA: 3 pages checked, median score 60.0, 2 below 80, 0 URLs patched, 2 URLs still missing",
    )
    assert "67% of the pages scored below 80" in messages[1][1]
    _spec({"render": "seeds"}).write(job_dir / "job.json")
    assert log_summary(job_dir, logger) is None  # a job with QA off: no summary


def test_the_days_figures_per_definition_flag_a_drop_from_the_previous_run(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    seeded = seed_qa_jobs(db_engine, tmp_path)
    hid, job2 = seeded["harvest_id"], seeded["jobs"][2]
    day_job = JobInfo(job2, hid, "qa-daily", "partial", 2, 3, None, None, None)
    (scores,) = page_scores.day_scores(db_engine, [day_job])
    assert scores.dropped  # median 95 → 60
    assert scores.before is not None and scores.before.median_score == 95.0
    rows = {k: v for scope, fam, k, v in page_scores.stats([scores]) if fam == "page_qa"}
    assert rows["median_score"] == 60.0 and rows["below"] == 2 and rows["dropped"] == 1.0
    (line,) = page_scores.lines(page_scores.summary([scores]))
    assert line == (
        "qa-daily: 3 pages checked, median score 60.0 (previous run 95.0), 2 below threshold,"
        " 0 URLs patched, 2 still missing  DROP"
    )
    job1 = JobInfo(seeded["jobs"][1], hid, "qa-daily", "partial", 1, 3, None, None, None)
    (first,) = page_scores.day_scores(db_engine, [job1])
    assert first.before is None and not first.dropped  # no earlier run to compare with
