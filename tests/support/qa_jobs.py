"""Harvest database rows of checked jobs for the QA tests: a definition on ``qa.test`` with two
runs whose QA reports (written by the crawler's report writer) are stored as the record task
stores them, and a job of another domain (tests/harvest/test_page_qa.py, the curator pages',
access's)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from harvestflow.contracts.qa_report import PageCheck, write_check, write_patches

TEMPLATE = {"qa": True, "render": "seeds", "qa_min_score": 80.0, "qa_max_below_share": 0.2}
# run 1: three good pages; run 2: the same pages, two of them broken now, one on a subdomain
RUNS = {
    1: [("http://qa.test/", 100.0), ("http://qa.test/a.html", 95.0), ("http://www.qa.test/", 90.0)],
    2: [("http://qa.test/", 99.0), ("http://qa.test/a.html", 40.0), ("http://www.qa.test/", 60.0)],
}


def report_files(tmp: Path, checks: list[tuple[str, float]]) -> str:
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
            report_files(job_dir, checks)
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
