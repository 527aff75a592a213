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

# the DB readers (harvest.jobs, harvest.results, harvest.preload.store: SQLAlchemy, ~0.3 CPU-s to
# import) are imported by the functions that read the DB: compute_day on files does not pay them
if TYPE_CHECKING:
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
    from harvest import jobs

    start, end = day_bounds(day)
    with engine.connect() as conn:
        rows = jobs.jobs_ended_between(conn, start, end)
    return [JobInfo(**r._asdict()) for r in rows]


def history_for_jobs(engine: Engine, job_ids: list[int]) -> pd.DataFrame:
    """(job_id, domain, stopreason, objects, bytes) of the jobs' historyinfo rows."""
    from harvest import results

    cols = ["job_id", "domain", "stopreason", "objects", "bytes"]
    if not job_ids:
        return pd.DataFrame(columns=cols)
    with engine.connect() as conn:
        rows = results.history_of_jobs(conn, list(job_ids))
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
    from harvest.preload import store as preload_store

    result: dict[str, str] = {}

    def put(domain: str, cls: str) -> None:
        old = result.get(domain)
        if old is None or _PRIORITY[cls] < _PRIORITY[old]:
            result[domain] = cls

    with engine.connect() as conn:
        for domain, origin, kind in preload_store.domain_origins(conn):
            cls = classify_origin(kind) if kind else "other"
            if cls == "other":
                cls = classify_origin(origin)
            put(domain, cls)
        for url in preload_store.selection_seed_urls(conn):
            put(domain_of_url(url), "curator")
    return result


def dns_check_counts(engine: Engine, day: date) -> dict[str, int]:
    """DNS checks made that day per class (active, failed, unknown)."""
    from harvest.preload import store as preload_store

    start, end = day_bounds(day)
    with engine.connect() as conn:
        return preload_store.dns_check_counts(conn, start, end)


def crawl_log_path(job_dir: str | None, data_dir: Path) -> Path | None:
    """The job's crawl.log (or crawl.log.gz); None when the job has no directory."""
    if not job_dir:
        return None
    base = Path(job_dir)
    if not base.is_absolute():
        base = data_dir / base
    return JobDir(base).crawl_log_file() or JobDir(base).crawl_log
