"""The crawler's capture-vs-replay QA of jobs, read back from what harvest keeps of them: the
QA reports stored with each job (``job_reports``, by :mod:`harvest.results`) and the job's
frozen template (its thresholds).

Why from the stored reports and not a table of scores: the crawler writes the reports as it
checks pages (harvestflow.contracts.qa_report), the record task stores every report of a job,
and every reader here needs a handful of jobs at a time; one parser (the contract's) reads
them all. Readers: the crawl task's log (:func:`log_summary`), the curator overview (jobs
whose pages fell below their template's share), the domain page and the selection record
(their pages' latest score), ``daily_qa_stats`` (figures per definition and day).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvestflow.contracts import ContractError
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.jobspec import JobSpec, Template
from harvestflow.contracts.qa_report import (
    QA_MISSING_REPORT,
    QA_REPORT,
    PageCheck,
    QaSummary,
    add_missing,
    parse_checks,
    read_checks,
    summarise,
)
from harvestflow.formats.urls import host_of

log = logging.getLogger(__name__)

DEFAULTS = Template()


@dataclass(frozen=True)
class JobQa:
    """One job's QA: its definition, when it ended, its pages' last checks, their summary."""

    job_id: int
    harvest_id: int
    harvest_name: str
    ended: datetime | None
    checks: list[PageCheck]
    summary: QaSummary


def _thresholds(template: Any) -> tuple[float, float]:
    t = template if isinstance(template, dict) else {}
    try:
        return (
            float(t.get("qa_min_score", DEFAULTS.qa_min_score)),
            float(t.get("qa_max_below_share", DEFAULTS.qa_max_below_share)),
        )
    except (TypeError, ValueError):
        return DEFAULTS.qa_min_score, DEFAULTS.qa_max_below_share


def log_summary(job_dir: Path, logger: logging.Logger) -> QaSummary | None:
    """The QA summary lines at the end of the crawl task's log (None: the job checks nothing).
    A run whose pages fell below its template's share is not failed: its log says so."""
    try:
        template = JobSpec.read(JobDir(job_dir).job_json).template
    except (OSError, ContractError) as exc:
        logger.warning("QA summary: job spec unreadable (%s)", exc)
        return None
    if not template.qa or template.render == "none":
        return None
    summary = summarise(read_checks(job_dir), template.qa_min_score, template.qa_max_below_share)
    for line in summary.lines():
        (logger.warning if summary.flagged else logger.info)("%s", line)
    return summary


def jobs_qa(conn: Connection, job_ids: Iterable[int]) -> dict[int, JobQa]:
    """The QA of each of ``job_ids`` that stored a QA report."""
    ids = sorted({int(j) for j in job_ids})
    if not ids:
        return {}
    rows = conn.execute(
        sa.text(
            "SELECT j.job_id, j.harvest_id, h.name, j.enddate, j.template, r.content, m.content"
            " FROM jobs j JOIN job_reports r ON r.job_id = j.job_id AND r.name = :n"
            " LEFT JOIN job_reports m ON m.job_id = j.job_id AND m.name = :m"
            " JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
            " WHERE j.job_id = ANY(:ids)"
        ),
        {"n": QA_REPORT, "m": QA_MISSING_REPORT, "ids": ids},
    ).all()
    out = {}
    for job_id, harvest_id, name, ended, template, content, missing in rows:
        checks = parse_checks(str(content))
        add_missing(checks, str(missing or ""))
        out[int(job_id)] = JobQa(
            int(job_id), int(harvest_id), str(name), ended, checks,
            summarise(checks, *_thresholds(template)),
        )  # fmt: skip
    return out


def flagged_jobs(conn: Connection, limit: int = 20) -> list[JobQa]:
    """Recent jobs (of the last ``limit`` with a QA report) whose share of pages below their
    threshold passed the template's: the curator overview lists them."""
    ids = conn.execute(
        sa.text("SELECT job_id FROM job_reports WHERE name = :n ORDER BY job_id DESC LIMIT :l"),
        {"n": QA_REPORT, "l": limit},
    ).scalars()
    found = jobs_qa(conn, ids)
    return [found[j] for j in sorted(found, reverse=True) if found[j].summary.flagged]


def latest_scores(
    conn: Connection, domains: Iterable[str], limit: int = 50
) -> list[dict[str, Any]]:
    """The latest score of each checked page of ``domains`` (a host of the domain or of a
    subdomain), from the newest jobs that harvested them; worst first, at most ``limit``."""
    names = sorted({d.lower() for d in domains if d})
    if not names:
        return []
    ids = conn.execute(
        sa.text(
            "SELECT DISTINCT hi.job_id FROM historyinfo hi"
            " JOIN configurations c ON c.config_id = hi.config_id"
            " JOIN domains d ON d.domain_id = c.domain_id"
            " JOIN job_reports r ON r.job_id = hi.job_id AND r.name = :n"
            " WHERE d.name = ANY(:d) ORDER BY hi.job_id DESC LIMIT 20"
        ),
        {"n": QA_REPORT, "d": names},
    ).scalars()
    found = jobs_qa(conn, ids)
    latest: dict[str, dict[str, Any]] = {}
    for job_id in sorted(found, reverse=True):
        job = found[job_id]
        for c in job.checks:
            host = host_of(c.page)
            if c.page in latest or not any(host == d or host.endswith("." + d) for d in names):
                continue
            latest[c.page] = {
                "job_id": job_id,
                "page": c.page,
                "score": c.score,
                "below": c.below(job.summary.min_score),
            }
    return sorted(latest.values(), key=lambda r: (r["score"], r["page"]))[:limit]


def previous_run(conn: Connection, harvest_id: int, before_num: int) -> list[JobQa]:
    """The QA of the jobs of a definition's last run before run ``before_num`` that checked
    pages ([] when none did)."""
    num = conn.execute(
        sa.text(
            "SELECT max(j.harvest_num) FROM jobs j JOIN job_reports r"
            " ON r.job_id = j.job_id AND r.name = :n WHERE j.harvest_id = :h"
            " AND j.harvest_num < :b"
        ),
        {"n": QA_REPORT, "h": harvest_id, "b": before_num},
    ).scalar()
    if num is None:
        return []
    ids = conn.execute(
        sa.text("SELECT job_id FROM jobs WHERE harvest_id = :h AND harvest_num = :r"),
        {"h": harvest_id, "r": num},
    ).scalars()
    found = jobs_qa(conn, ids)
    return [found[j] for j in sorted(found)]
