"""The QA pass's scores read back from what harvest keeps (harvest.page_qa), on a real harvest
database: two runs of one definition whose stored QA reports were written by the crawler's
report writer; the crawl task's log summary; the day's per-definition figures with the
previous run and a drop flagged (qa.page_scores, what daily_qa_stats runs)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from harvest.page_qa import flagged_jobs, jobs_qa, latest_scores, log_summary, previous_run
from harvestflow.contracts.jobspec import JobSpec
from harvestflow.contracts.qa_report import PageCheck, write_check, write_patches
from qa import page_scores
from qa.inputs import JobInfo

pytestmark = pytest.mark.services

TEMPLATE = {"qa": True, "render": "seeds", "qa_min_score": 80.0, "qa_max_below_share": 0.2}
# run 1: three good pages; run 2: the same pages, two of them broken now, one on a subdomain
RUNS = {
    1: [("http://qa.test/", 100.0), ("http://qa.test/a.html", 95.0), ("http://www.qa.test/", 90.0)],
    2: [("http://qa.test/", 99.0), ("http://qa.test/a.html", 40.0), ("http://www.qa.test/", 60.0)],
}


def _report(tmp: Path, checks: list[tuple[str, float]]) -> str:
    (tmp / "reports").mkdir(parents=True)
    for page, score in checks:
        missing = [] if score >= 80 else [page + "missing.png"]
        write_check(tmp / "reports", PageCheck(page, 1, score, 0.0, 1.0, 3, missing))
        if missing:
            write_patches(tmp / "reports", page, 1, {missing[0]: "not-patched:403"})
    return (tmp / "reports" / "qa-report.txt").read_text()


def seed_qa_jobs(engine: sa.Engine, tmp_path: Path) -> dict[str, Any]:
    """The definition 'qa-daily' on domain qa.test, two runs with a stored QA report each (and
    a job of another domain whose pages must not count for qa.test)."""
    from harvest.bootstrap import ensure_reference_data
    from harvest.definitions import ensure_selective_definition
    from harvest.domains import ensure_config

    ensure_reference_data(engine)
    jobs = {}
    with engine.begin() as conn:
        config = ensure_config(conn, "qa.test", seeds=["http://qa.test/"]).config_id
        other = ensure_config(conn, "other.test", seeds=["http://other.test/"]).config_id
        hid = ensure_selective_definition(conn, "qa-daily", frequency=None)
        for run, checks in [*RUNS.items(), (3, [("http://other.test/", 10.0)])]:
            job_dir = tmp_path / f"job-{run}"
            _report(job_dir, checks)
            job = conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist, enddate, job_dir) VALUES (:h, :n, 0, 3,"
                    " 'FOCUSED', 't', CAST(:t AS jsonb), '', :e, :d) RETURNING job_id"
                ),
                {"h": hid, "n": run, "t": json.dumps(TEMPLATE), "e": datetime(2026, 11, run, tzinfo=UTC),
                 "d": str(job_dir)},
            ).scalar_one()  # fmt: skip
            for name in ("qa-report.txt", "qa-missing-report.txt"):  # as record_job_results
                if not (job_dir / "reports" / name).exists():
                    continue  # nothing missing in that run
                conn.execute(
                    sa.text("INSERT INTO job_reports (job_id, name, content) VALUES (:j, :n, :c)"),
                    {"j": job, "n": name, "c": (job_dir / "reports" / name).read_text()},
                )
            conn.execute(
                sa.text(
                    "INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                    " harvest_id, job_id) VALUES (0, 10, 1000, :c, :h, :j)"
                ),
                {"c": other if run == 3 else config, "h": hid, "j": job},
            )
            jobs[run] = job
    return {"harvest_id": hid, "jobs": jobs}


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
    _report(job_dir, RUNS[2])
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
