"""The overview page, attention first: what needs someone now, then the archive's growth.

Why this order: a curator or an engineer opens ``/curator/`` to learn what to do, so the page
lists the failed jobs of the last days with their reason, the crawls running now (their
progress refreshes by itself), jobs a QA verdict or their replay's missing URLs put in doubt,
the preservation manual queue, the last preload's DNS failures and the selection records with
warnings, each linking to the page where it is dealt with; then the growth charts (with their
CSV) and the next scheduled harvests. Every list comes from the stage owning its tables
(:mod:`harvest.attention`, :mod:`harvest.growth`, :mod:`access.missing`,
:mod:`preservation.records`), bounded, so the page costs the same at any size.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from access import missing
from app.curator import dagruns, jobfiles, svgchart
from harvest import attention, growth
from harvest.page_qa import flagged_jobs
from harvestflow.formats.csvcells import safe_row
from preservation import records

log = logging.getLogger(__name__)
_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)(?:\((\d+(?:\.\d+)?)\))?")

RECENT_DAYS = 7  # "failed in the last days"
GROWTH_DAYS = 90
REFRESH_S = 5  # how often the running crawls' figures are fetched again by the page

Connect = Callable[[], AbstractContextManager[sa.Connection]]
Page = Callable[..., HTMLResponse]


def attention_lists(conn: sa.Connection, now: datetime) -> dict[str, Any]:
    """Everything the overview's first part lists, each with its total."""
    manual = records.manual_queue(conn)
    return {
        "failed": attention.failed_jobs(conn, now - timedelta(days=RECENT_DAYS)),
        "low_qa": attention.low_qa_jobs(conn),
        "unsent": missing.unsent_by_job(conn),
        "manual": {"rows": manual[:20], "total": len(manual)},
        "dns": attention.last_preload_dns_failures(conn),
        "records": attention.selection_warnings(conn),
        "recent_days": RECENT_DAYS,
    }


def running(conn: sa.Connection, now: datetime) -> dict[str, Any]:
    """The running crawls with where each stands (its progress log's newest sample)."""
    found = attention.running_jobs(conn)
    for row in found["rows"]:
        row["progress"] = progress_of(row, now)
    return found


def progress_of(job: dict[str, Any], now: datetime) -> dict[str, Any] | None:
    """URLs done and queued, the rate, time left against the budget and at the current rate."""
    samples = jobfiles.read_progress(Path(job["job_dir"]) if job["job_dir"] else None, 2)
    if not samples:
        return None
    last = samples[-1]
    rate = _rate(last["docs_per_s"])
    started = job["startdate"]
    elapsed = (now - started).total_seconds() if started else None
    budget = int(job["budget_s"] or 0)
    return {
        "time": last["time"],
        "done": last["downloaded"],
        "queued": last["queued"],
        "rate": rate,
        "elapsed_s": elapsed,
        "budget_left_s": max(budget - elapsed, 0) if budget and elapsed is not None else None,
        "eta_s": last["queued"] / rate if rate > 0 else None,
    }


def _rate(field: str) -> float:
    """URLs/s of a progress line's ``now(average)`` field: the crawl's average (steadier for a
    time left), or the one figure when there is no average."""
    found = _RATE.match(field)
    if not found:
        return 0.0
    return float(found.group(2) or found.group(1))


def growth_csv(rows: list[dict[str, Any]]) -> str:
    """The growth chart's data as CSV: day, channel, captures, bytes."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(growth.COLUMNS)
    writer.writerows(safe_row([str(r[c]) for c in growth.COLUMNS]) for r in rows)
    return out.getvalue()


def duration(seconds: float | None) -> str:
    """A duration as people read it: '2 h 05 min', '4 min 10 s'; '' for none."""
    if seconds is None:
        return ""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def airflow_failures(airflow_db: Callable[[], sa.Engine] | None, now: datetime) -> dict[str, Any]:
    """The failed DAG runs of the last days, or why they cannot be shown (never a 500: the
    rest of the overview is the harvest database's)."""
    if airflow_db is None:
        return {"rows": [], "total": 0, "error": "Airflow's metadata database is not configured"}
    try:
        with airflow_db().connect() as conn:
            found = dagruns.failed_runs(
                conn.execution_options(postgresql_readonly=True), now - timedelta(days=RECENT_DAYS)
            )
    except sa.exc.SQLAlchemyError as exc:
        log.warning("overview: Airflow's run history unreadable: %s", exc)
        return {
            "rows": [],
            "total": 0,
            "error": f"Airflow's run history could not be read ({exc.__class__.__name__})",
        }
    return {**found, "error": ""}


def add_overview_routes(
    app: FastAPI,
    *,
    page: Page,
    connect: Connect,
    task_link: Callable[[Any], str],
    airflow_db: Callable[[], sa.Engine] | None = None,
) -> None:
    """``/`` (the overview, its growth charts inline), ``/overview/running`` (its
    self-refreshing part) and the charts' CSV; ``task_link`` makes a job's Airflow task-log
    link; ``airflow_db``: Airflow's metadata database, for its failed runs."""

    def now() -> datetime:
        return datetime.now(UTC)

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        at = now()
        with connect() as conn:
            lists = attention_lists(conn, at)
            runs = running(conn, at)
            upcoming = attention.next_harvests(conn)
            growth_rows = growth.daily_growth(conn, GROWTH_DAYS)
            qa_flagged = flagged_jobs(conn)  # runs whose rendered pages fell below QA
        lists["runs"] = airflow_failures(airflow_db, at)
        for row in lists["failed"]["rows"]:
            row["task_link"] = task_link(row.get("airflow_task"))
        return page(
            request, "index.html", title="Overview", a=lists, run=runs, upcoming=upcoming,
            refresh_s=REFRESH_S, growth_days=GROWTH_DAYS, qa_flagged=qa_flagged,
            charts=svgchart.growth_charts(growth_rows),  # every text in them escaped
        )  # fmt: skip

    @app.get("/overview/running", response_class=HTMLResponse)
    def running_part(request: Request) -> HTMLResponse:
        with connect() as conn:
            runs = running(conn, now())
        return page(request, "running.html", run=runs)

    @app.get("/growth.csv")
    def growth_data() -> Response:
        with connect() as conn:
            rows = growth.daily_growth(conn, GROWTH_DAYS)
        headers = {"Content-Disposition": 'attachment; filename="growth.csv"'}
        return Response(growth_csv(rows), media_type="text/csv; charset=utf-8", headers=headers)
