"""What the daily QA reads from the harvest DB: the day's jobs, their history, origins, DNS checks.

Why separate: the computation (``daily.compute_day``) takes plain objects so that it can be
tested on golden files without a database; only this module knows the SQL. A "day" is the jobs
that *ended* on that UTC date (``jobs.enddate``), whatever their final status, so a failed job's
partial crawl is counted and its problems reported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from harvestflow.contracts.jobdir import JobDir
from qa.hosts import domain_of_url

if TYPE_CHECKING:  # sqlalchemy is imported where the DB is used: the benchmark and
    # file-only runs do not pay its ~0.2 s import
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobInfo:
    """One job of the day, as the QA needs it."""

    job_id: int
    harvest_id: int
    harvest_name: str
    kind: str  # 'partial' (selective) or 'full' (snapshot/broad)
    harvest_num: int
    status: int
    startdate: datetime | None
    enddate: datetime | None
    job_dir: str | None

    @property
    def duration_s(self) -> float:
        if self.startdate and self.enddate:
            return max((self.enddate - self.startdate).total_seconds(), 0.0)
        return 0.0


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0), tzinfo=UTC)
    return start, start + timedelta(days=1)


def jobs_ended_on(engine: Engine, day: date) -> list[JobInfo]:
    import sqlalchemy as sa

    start, end = day_bounds(day)
    sql = sa.text(
        "SELECT j.job_id, j.harvest_id, h.name AS harvest_name, h.kind, j.harvest_num,"
        " j.status, j.startdate, j.enddate, j.job_dir"
        " FROM jobs j JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
        " WHERE j.enddate >= :start AND j.enddate < :end ORDER BY j.job_id"
    )
    with engine.connect() as conn:
        rows = conn.execute(sql, {"start": start, "end": end}).all()
    return [JobInfo(**r._asdict()) for r in rows]


def history_for_jobs(engine: Engine, job_ids: list[int]) -> pd.DataFrame:
    """(job_id, domain, stopreason, objects, bytes) of the jobs' historyinfo rows."""
    import sqlalchemy as sa

    cols = ["job_id", "domain", "stopreason", "objects", "bytes"]
    if not job_ids:
        return pd.DataFrame(columns=cols)
    sql = sa.text(
        "SELECT h.job_id, d.name AS domain, h.stopreason, h.objectcount AS objects,"
        " h.bytecount AS bytes FROM historyinfo h"
        " JOIN configurations c ON c.config_id = h.config_id"
        " JOIN domains d ON d.domain_id = c.domain_id"
        " WHERE h.job_id = ANY(:ids) ORDER BY h.job_id, d.name"
    )
    with engine.connect() as conn:
        rows = conn.execute(sql, {"ids": list(job_ids)}).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=cols)


def classify_origin(name: str) -> str:
    """Origin class of a preload source (its kind or name): curator, registry, database, ..."""
    text = (name or "").lower()
    if any(w in text for w in ("curator", "selection", "librarian", "selective")):
        return "curator"
    if any(w in text for w in ("registry", "registrar", "afnic", "opt-nc", "zone")):
        return "registry"
    if text == "redirect":
        return "redirect"
    if any(w in text for w in ("database", "existing", "harvestdb", "db")):
        return "database"
    return "other"


_PRIORITY = {"curator": 0, "registry": 1, "database": 2, "redirect": 3, "other": 4}


def origin_classes(engine: Engine) -> dict[str, str]:
    """Domain → origin class; a domain with several origins takes the most specific one.

    Curators' selection records (their seed URLs' domains) count as curator-selected whatever
    the preload said; preload origins are classified from the source's kind, else its name.
    """
    import sqlalchemy as sa

    result: dict[str, str] = {}

    def put(domain: str, cls: str) -> None:
        old = result.get(domain)
        if old is None or _PRIORITY[cls] < _PRIORITY[old]:
            result[domain] = cls

    sql = sa.text(
        "SELECT DISTINCT o.domain, o.origin, s.kind FROM domain_origins o"
        " LEFT JOIN preload_sources s ON s.run_id = o.run_id AND s.source_name = o.origin"
    )
    with engine.connect() as conn:
        for domain, origin, kind in conn.execute(sql):
            cls = classify_origin(kind) if kind else "other"
            if cls == "other":
                cls = classify_origin(origin)
            put(domain, cls)
        for (url,) in conn.execute(sa.text("SELECT seed_url FROM selection_records")):
            put(domain_of_url(url), "curator")
    return result


def dns_check_counts(engine: Engine, day: date) -> dict[str, int]:
    """DNS checks made that day per class (active, failed, unknown)."""
    import sqlalchemy as sa

    start, end = day_bounds(day)
    sql = sa.text(
        "SELECT class, count(*) FROM dns_checks WHERE checked_at >= :start AND checked_at < :end"
        " GROUP BY class ORDER BY class"
    )
    with engine.connect() as conn:
        return {c: int(n) for c, n in conn.execute(sql, {"start": start, "end": end})}


def crawl_log_path(job_dir: str | None, data_dir: Path) -> Path | None:
    """The job's crawl.log (or crawl.log.gz); None when the job has no directory."""
    if not job_dir:
        return None
    base = Path(job_dir)
    if not base.is_absolute():
        base = data_dir / base
    return JobDir(base).crawl_log_file() or JobDir(base).crawl_log
