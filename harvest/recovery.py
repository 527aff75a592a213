"""Jobs left behind by a dead worker: detection, post-processing, resubmission.

Why: a crawl worker can die (machine lost, OOM kill) leaving its job SUBMITTED or STARTED for
ever. A job is taken for dead when nothing in its directory has changed for a while and it has
no summary (a running crawl logs progress at a steady interval). Its partial output stays where
it is and is post-processed like any job (history from what is known, reports stored, status
FAILED with the reason); a new job with the same frozen spec replaces it (NetarchiveSuite's
"resubmit": the old one becomes RESUBMITTED and points to the new one). Both steps are
idempotent: resubmitting twice returns the same new job.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from crawler.lease_tables import jobs_with_live_lease
from harvest.common import engine_or_default
from harvest.jobs import finished_summary, resubmit_job
from harvest.results import record_job_results
from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.job_status import JobStatus

log = logging.getLogger(__name__)


def last_activity(job_dir: Path, max_files: int = 10000) -> float | None:
    """Newest modification time of anything in the job directory (None: no directory)."""
    if not job_dir.is_dir():
        return None
    newest = job_dir.stat().st_mtime
    seen = 0
    for root, _dirs, files in os.walk(job_dir):
        for name in files:
            try:
                newest = max(newest, os.stat(os.path.join(root, name)).st_mtime)
            except FileNotFoundError:  # a file renamed while we look
                continue
            seen += 1
            if seen >= max_files:
                return newest
    return newest


def find_dead_jobs(
    stale_after_s: float = 3600,
    engine: Engine | None = None,
    *,
    exclude: Iterable[int] = (),
    now: float | None = None,
) -> list[int]:
    """SUBMITTED/STARTED jobs without a finished summary, their directory silent for
    ``stale_after_s``.

    ``exclude``: jobs known to be alive (e.g. whose Airflow task is running); a job whose
    lease is renewed by its crawler is alive too.
    """
    engine = engine_or_default(engine)
    now = time.time() if now is None else now
    skip = set(exclude)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT job_id, job_dir, status, submitteddate FROM jobs"
                " WHERE status IN (:s, :t)"
                " ORDER BY job_id"
            ),
            {"s": JobStatus.SUBMITTED, "t": JobStatus.STARTED},
        ).all()
        # a crawler still renewing the job's lease (crawler/leases.py) is alive, on whatever
        # machine, however quiet its directory looks from here
        skip |= jobs_with_live_lease(conn)
    dead = []
    for row in rows:
        if row.job_id in skip:
            continue
        if row.job_dir and finished_summary(JobDir(row.job_dir).job_json) is not None:
            continue  # finished: only its results are missing, not a dead worker
        activity = last_activity(Path(row.job_dir)) if row.job_dir else None
        if activity is None and row.submitteddate is not None:
            activity = row.submitteddate.timestamp()
        if activity is not None and now - activity >= stale_after_s:
            dead.append(int(row.job_id))
    return dead


def salvage_job(job_id: int, engine: Engine | None = None, *, reason: str) -> bool:
    """Finish a dead job's partial output in place (repaired WARCs, reports, metadata WARC,
    summary.json marked "salvaged"); True when it was salvaged.

    A job that never wrote anything (no job.json) or already finished is left as it is; a
    failure to salvage is logged and never stops the resubmission (the output stays on disk).
    """
    from crawler.salvage import salvage_output

    engine = engine_or_default(engine)
    with engine.connect() as conn:
        job_dir = conn.execute(
            sa.text("SELECT job_dir FROM jobs WHERE job_id = :j"), {"j": job_id}
        ).scalar()
    if not job_dir or not Path(job_dir).is_dir():
        log.info("dead job %s: no job directory, nothing to salvage", job_id)
        return False
    try:
        summary = salvage_output(Path(job_dir), reason=reason)
    except (FileNotFoundError, FileExistsError) as exc:
        log.info("dead job %s: nothing to salvage (%s)", job_id, exc)
        return False
    except Exception:
        log.exception(
            "dead job %s: could not salvage %s; its files are left in place", job_id, job_dir
        )
        return False
    log.warning(
        "dead job %s: partial output salvaged in %s (%s URLs in %d WARCs)",
        job_id,
        job_dir,
        summary.urls,
        len(summary.warcs),
    )
    return True


def resubmit_dead_jobs(
    stale_after_s: float = 3600,
    engine: Engine | None = None,
    *,
    exclude: Iterable[int] = (),
) -> dict[str, Any]:
    """Find dead jobs, salvage and post-process what they left, resubmit them.

    Returns {dead, resubmitted, salvaged}.
    """
    engine = engine_or_default(engine)
    dead = find_dead_jobs(stale_after_s, engine, exclude=exclude)
    resubmitted: dict[int, int] = {}
    salvaged: list[int] = []
    for job_id in dead:
        why = f"worker died: no activity for {stale_after_s:.0f} s"
        if salvage_job(job_id, engine, reason=why):
            salvaged.append(job_id)
        result = record_job_results(job_id, engine)
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE jobs SET harvest_errors = concat_ws('; ', CAST(:why AS text),"
                    " harvest_errors) WHERE job_id = :j AND status IN (:d, :f)"
                ),
                {"why": why, "j": job_id, "d": JobStatus.DONE, "f": JobStatus.FAILED},
            )
        resubmitted[job_id] = resubmit_job(job_id, engine, reason=why)
        log.warning(
            "dead job %s (%s) kept its output in place, resubmitted as %s",
            job_id,
            result["status"],
            resubmitted[job_id],
        )
    return {"dead": dead, "resubmitted": resubmitted, "salvaged": salvaged}
