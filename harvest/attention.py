"""What in the harvest database needs a person now: the curator overview's lists.

Why here: the harvest stage owns these tables (jobs, definitions, QA comments, selection
records, preload checks), so the overview reads them through these functions instead of its
own SQL. Every list is bounded (``LIMIT``) and read through an index, with its full count
beside it: the overview answers in the same time at 100,000 jobs as at ten.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from harvestflow.formats.job_status import FAILURES, JobStatus

QA_ATTENTION = ("failed", "issues")  # a job's newest QA status that asks for a person
_FAILED = ", ".join(str(int(s)) for s in sorted(FAILURES))


def _rows(conn: sa.Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(sa.text(sql), params).mappings()]


def failed_jobs(conn: sa.Connection, since: datetime, limit: int = 20) -> dict[str, Any]:
    """Jobs that failed since ``since``, newest first, with their recorded reason."""
    where = f" WHERE j.status IN ({_FAILED}) AND j.enddate >= :since"
    total = conn.execute(sa.text("SELECT count(*) FROM jobs j" + where), {"since": since})
    rows = _rows(
        conn,
        "SELECT j.job_id, j.harvest_id, h.name AS harvest_name, j.harvest_num, j.status,"
        " j.enddate, j.harvest_errors, j.harvest_error_details, j.upload_errors, j.airflow_task"
        " FROM jobs j JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
        + where
        + " ORDER BY j.enddate DESC, j.job_id DESC LIMIT :lim",
        since=since,
        lim=limit,
    )
    for row in rows:
        row["status_name"] = JobStatus.name_of(row["status"])
        row["reason"] = (
            row["harvest_errors"] or row["upload_errors"] or row["harvest_error_details"] or ""
        )
    return {"rows": rows, "total": int(total.scalar_one())}


def running_jobs(conn: sa.Connection, limit: int = 50) -> dict[str, Any]:
    """Jobs a crawler runs now, oldest start first, with their time budget (seconds, 0 none)."""
    where = f" WHERE j.status = {int(JobStatus.STARTED)}"
    total = conn.execute(sa.text("SELECT count(*) FROM jobs j" + where))
    rows = _rows(
        conn,
        "SELECT j.job_id, j.harvest_id, h.name AS harvest_name, j.channel, j.startdate,"
        " j.forcemaxrunningtime AS budget_s, j.forcemaxobjects AS max_objects, j.job_dir"
        " FROM jobs j JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
        + where
        + " ORDER BY j.startdate NULLS LAST, j.job_id LIMIT :lim",
        lim=limit,
    )
    return {"rows": rows, "total": int(total.scalar_one())}


def low_qa_jobs(conn: sa.Connection, limit: int = 20) -> dict[str, Any]:
    """Jobs whose newest QA status is failed or issues, newest verdict first."""
    latest = (
        "SELECT DISTINCT ON (c.job_id) c.job_id, c.qa_status, c.body, c.author, c.written_at"
        " FROM job_qa_comments c WHERE c.qa_status IS NOT NULL"
        " ORDER BY c.job_id, c.comment_id DESC"
    )
    bad = list(QA_ATTENTION)
    total = conn.execute(
        sa.text(f"SELECT count(*) FROM ({latest}) q WHERE q.qa_status = ANY(:bad)"), {"bad": bad}
    ).scalar_one()
    rows = _rows(
        conn,
        f"SELECT q.*, h.name AS harvest_name FROM ({latest}) q"
        " JOIN jobs j ON j.job_id = q.job_id JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
        " WHERE q.qa_status = ANY(:bad) ORDER BY q.written_at DESC LIMIT :lim",
        bad=bad,
        lim=limit,
    )
    return {"rows": rows, "total": int(total)}


def selection_warnings(conn: sa.Connection, limit: int = 20) -> dict[str, Any]:
    """Active selection records whose validation found a problem, last changed first."""
    where = " WHERE active AND validation_status = 'warning'"
    total = conn.execute(sa.text("SELECT count(*) FROM selection_records" + where)).scalar_one()
    rows = _rows(
        conn,
        "SELECT record_id, collection, title, seed_url, validation_detail, modified_at"
        " FROM selection_records" + where + " ORDER BY modified_at DESC LIMIT :lim",
        lim=limit,
    )
    return {"rows": rows, "total": int(total)}


def last_preload_dns_failures(conn: sa.Connection, limit: int = 20) -> dict[str, Any] | None:
    """The newest preload run with its DNS failures (first ``limit`` domains); None: no run."""
    run = _rows(
        conn, "SELECT run_id, started_at, finished_at FROM preload_runs"
        " ORDER BY started_at DESC LIMIT 1",
    )  # fmt: skip
    if not run:
        return None
    where = " FROM dns_checks WHERE run_id = :r AND class = 'failed'"
    r = run[0]["run_id"]
    total = conn.execute(sa.text("SELECT count(*)" + where), {"r": r}).scalar_one()
    rows = _rows(
        conn, "SELECT domain, detail" + where + " ORDER BY domain LIMIT :lim", r=r, lim=limit
    )
    return {**run[0], "rows": rows, "total": int(total)}


def next_harvests(conn: sa.Connection, limit: int = 10) -> list[dict[str, Any]]:
    """The active scheduled definitions due next, soonest first."""
    return _rows(
        conn,
        "SELECT h.harvest_id, h.name, p.nextdate, p.frequency, c.name AS channel"
        " FROM partialharvests p JOIN harvestdefinitions h ON h.harvest_id = p.harvest_id"
        " LEFT JOIN harvestchannel c ON c.id = h.channel_id"
        " WHERE h.isactive AND p.nextdate IS NOT NULL ORDER BY p.nextdate, h.harvest_id"
        " LIMIT :lim",
        lim=limit,
    )
