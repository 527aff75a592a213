"""Post-processing of a crawled job: harvest history, stored reports, final status.

Why here: ``historyinfo`` is what the job generator estimates from and what curators read as
the harvest history, so the planning side owns how a crawl's summary becomes history rows. Every
write is an UPSERT (a retried task rewrites the same rows). A job without a readable summary
FAILED (its partial output is kept); a domain of the job missing from the summary is recorded
as DOWNLOAD_UNFINISHED with what is known (nothing).
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import as_utc, engine_or_default, utcnow
from harvest.jobs import current_job_id
from harvestflow.contracts import ContractError
from harvestflow.contracts.jobdir import SUMMARY_JSON, JobDir
from harvestflow.contracts.summary import JobSummary
from harvestflow.formats.job_status import JobStatus
from harvestflow.formats.stop_reasons import StopReason

log = logging.getLogger(__name__)

SUMMARY = SUMMARY_JSON
MAX_REPORT_BYTES = 5_000_000  # a frontier report of a big crawl is summarised, not stored whole


def _read_summary(job_dir: Path) -> tuple[JobSummary | None, str | None]:
    try:
        return JobSummary.read(JobDir(job_dir).summary_json), None
    except FileNotFoundError:
        return None, f"no {SUMMARY} in {job_dir}: the crawl did not finish"
    except ContractError as exc:
        return None, str(exc)


def _ended(summary: JobSummary) -> datetime:
    """When the crawl ended (the summary's "ended"), else now."""
    ended = summary.ended_at
    if ended is not None:
        return as_utc(ended)
    if summary.ended:
        log.warning("summary: 'ended' %r is not an ISO date, using now", summary.ended)
    return utcnow()


def _store_reports(conn: Connection, job_id: int, job_dir: Path) -> list[str]:
    names = []
    candidates = JobDir(job_dir).report_files()
    summary = JobDir(job_dir).summary_json
    if summary.is_file():
        candidates.append(summary)
    for path in candidates:
        raw = path.read_bytes()
        if len(raw) > MAX_REPORT_BYTES:
            raw = raw[:MAX_REPORT_BYTES] + b"\n[... truncated, see the job directory]\n"
        conn.execute(
            sa.text(
                "INSERT INTO job_reports (job_id, name, content) VALUES (:j, :n, :c)"
                " ON CONFLICT (job_id, name) DO UPDATE SET content = EXCLUDED.content"
            ),
            {"j": job_id, "n": path.name, "c": raw.decode("utf-8", errors="replace")},
        )
        names.append(path.name)
    return names


def _record_history(
    conn: Connection, job: Any, summary: JobSummary, when: Any
) -> tuple[int, list[str]]:
    configs = {
        r.name: r.config_id
        for r in conn.execute(
            sa.text(
                "SELECT d.name, jc.config_id FROM job_configs jc JOIN configurations c"
                " USING (config_id) JOIN domains d USING (domain_id) WHERE jc.job_id = :j"
            ),
            {"j": job.job_id},
        )
    }
    problems: list[str] = []
    stats = summary.domains
    rows = 0
    for domain, config_id in sorted(configs.items()):
        entry = stats.get(domain)
        if domain in summary.bad_domains:
            error = summary.bad_domains[domain]
            problems.append(f"domain {domain}: bad statistics in the summary ({error})")
            objects, size, reason = 0, 0, int(StopReason.DOWNLOAD_UNFINISHED)
        elif entry is not None:
            objects, size, reason = entry.objects, entry.bytes, entry.stop_reason
            known = sorted(int(r) for r in StopReason)
            if reason not in known:
                problems.append(
                    f"domain {domain}: bad statistics in the summary"
                    f" (stop reason {reason} not in {known})"
                )
                objects, size, reason = 0, 0, StopReason.DOWNLOAD_UNFINISHED
        else:
            objects, size, reason = 0, 0, StopReason.DOWNLOAD_UNFINISHED
            problems.append(f"domain {domain}: not in the summary, recorded as unfinished")
        conn.execute(
            sa.text(
                "INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                " harvest_id, job_id, harvest_time) VALUES (:r, :o, :b, :c, :h, :j, :t)"
                " ON CONFLICT (config_id, harvest_id, job_id) DO UPDATE SET"
                " stopreason = EXCLUDED.stopreason, objectcount = EXCLUDED.objectcount,"
                " bytecount = EXCLUDED.bytecount, harvest_time = EXCLUDED.harvest_time"
            ),
            {
                "r": reason,
                "o": objects,
                "b": size,
                "c": config_id,
                "h": job.harvest_id,
                "j": job.job_id,
                "t": when,
            },
        )
        rows += 1
    for domain in sorted((set(stats) | set(summary.bad_domains)) - set(configs)):
        problems.append(f"domain {domain}: in the summary but not in the job, ignored")
    return rows, problems


def record_job_results(job_id: int, engine: Engine | None = None) -> dict[str, Any]:
    """Read summary.json and reports of the job's directory into the database.

    ``job_id`` may be a job since resubmitted: the job it was resubmitted as is recorded.

    Returns {job_id, status, history_rows, reports, urls, bytes, problems}.
    """
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        job_id = current_job_id(conn, job_id)
        job = conn.execute(
            sa.text("SELECT * FROM jobs WHERE job_id = :j FOR UPDATE"), {"j": job_id}
        ).first()
        if job is None:
            raise LookupError(f"job {job_id} does not exist")
        if not job.job_dir:
            raise ValueError(f"job {job_id} was never prepared (no job directory)")
        job_dir = Path(job.job_dir)
        summary, error = _read_summary(job_dir)
        reports = _store_reports(conn, job_id, job_dir) if job_dir.is_dir() else []
        history_rows, problems = 0, list[str]()
        if summary is not None:
            history_rows, problems = _record_history(conn, job, summary, _ended(summary))
            # an unfinished crawl (SIGTERM, a salvaged dead one) is FAILED with what it fetched
            # in the history: its frontier was never finished (crawler.launch.CrawlUnfinished)
            status = JobStatus.DONE if summary.finished else JobStatus.FAILED
            details = "; ".join(problems) or None
            crawl_status = summary.status
            errors = (
                None
                if crawl_status == "complete"
                # an operator's stop (crawler/control.py): DONE, and said so
                else "crawl stopped by operator"
                if crawl_status == "stopped"
                else f"crawl ended: {crawl_status}"
            )
        else:
            status = JobStatus.FAILED
            errors, details = error, None
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = GREATEST(status, :s), harvest_errors = :e,"
                " harvest_error_details = :d, enddate = COALESCE(enddate, now()),"
                " startdate = COALESCE(startdate, submitteddate) WHERE job_id = :j"
            ),
            {"s": status, "e": errors, "d": details, "j": job_id},
        )
    result = {
        "job_id": job_id,
        "status": status.name,
        "history_rows": history_rows,
        "reports": reports,
        "urls": summary.urls if summary is not None else 0,
        "bytes": summary.bytes if summary is not None else 0,
        "problems": problems if summary is not None else [error],
    }
    if status == JobStatus.FAILED:
        log.error("job %s FAILED: %s", job_id, error or errors)
    else:
        log.info(
            "job %s DONE: %d history rows, %d reports, %d URLs, %d bytes",
            job_id,
            history_rows,
            len(reports),
            result["urls"],
            result["bytes"],
        )
    return result


# The harvest history as the other stages (QA) read it: they call these, never SQL on it.


def history_of_jobs(conn: Connection, job_ids: list[int]) -> list[Any]:
    """(job_id, domain, stopreason, objects, bytes) of the jobs' historyinfo rows."""
    sql = sa.text(
        "SELECT h.job_id, d.name AS domain, h.stopreason, h.objectcount AS objects,"
        " h.bytecount AS bytes FROM historyinfo h"
        " JOIN configurations c ON c.config_id = h.config_id"
        " JOIN domains d ON d.domain_id = c.domain_id"
        " WHERE h.job_id = ANY(:ids) ORDER BY h.job_id, d.name"
    )
    return list(conn.execute(sql, {"ids": list(job_ids)}).all())


def history_rows(conn: Connection, harvest_id: int, runs: list[int] | None = None) -> list[Any]:
    """(run, domain, objects, bytes, stopreason) of a definition's historyinfo rows (of
    ``runs`` only, when given), by run and domain."""
    only = " AND j.harvest_num = ANY(:runs)" if runs is not None else ""
    sql = sa.text(
        "SELECT j.harvest_num AS run, d.name AS domain, h.objectcount AS objects,"
        " h.bytecount AS bytes, h.stopreason FROM historyinfo h"
        " JOIN jobs j ON j.job_id = h.job_id"
        " JOIN configurations c ON c.config_id = h.config_id"
        " JOIN domains d ON d.domain_id = c.domain_id"
        f" WHERE h.harvest_id = :h{only} ORDER BY j.harvest_num, d.name"
    )
    params: dict[str, object] = {"h": harvest_id}
    if runs is not None:
        params["runs"] = list(runs)
    return list(conn.execute(sql, params).all())


def history_runs(conn: Connection, harvest_id: int) -> list[int]:
    """The run numbers of a definition that have harvest history, ascending."""
    sql = sa.text(
        "SELECT DISTINCT j.harvest_num FROM historyinfo h JOIN jobs j ON j.job_id = h.job_id"
        " WHERE h.harvest_id = :h ORDER BY 1"
    )
    return [int(r[0]) for r in conn.execute(sql, {"h": harvest_id})]
