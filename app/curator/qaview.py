"""The capture-vs-replay QA of a job's rendered pages, where curators look: the job page's
table (worst page first, the capture's and the replay's screenshots side by side, the URLs
still missing) and the screenshots' route; the latest score of a domain's pages (the domain
page and the selection record).

Why read from the job's reports (harvestflow.contracts.qa_report): the crawler writes them as
it checks pages, so a running job's page shows its scores as they come; the reports are also
stored with the job (``job_reports``), which is where a domain's latest scores are read from
when the job directory has moved on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import FastAPI, HTTPException
from fastapi import Path as PathParam
from fastapi.responses import Response

from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.jobspec import JobSpec
from harvestflow.contracts.qa_report import (
    QA_REPORT,
    QA_SHOTS,
    parse_checks,
    read_checks,
)
from harvestflow.curator.jobfiles import inside
from harvestflow.formats.urls import host_of

log = logging.getLogger(__name__)

MAX_ROWS = 100  # pages shown on the job page (worst first)
SHOT_NAME = r"^[0-9a-f]{16}-(capture|replay-[12])\.png$"
ShotName = Annotated[str, PathParam(pattern=SHOT_NAME, max_length=40)]


def min_score(job_dir: Path | None) -> float:
    """The job's page threshold (its frozen template's ``qa_min_score``)."""
    if job_dir is not None:
        try:
            return JobSpec.read(JobDir(job_dir).job_json).template.qa_min_score
        except (OSError, ValueError) as exc:
            log.info("%s: no readable job spec (%s): default QA threshold", job_dir, exc)
    from harvestflow.contracts.jobspec import Template

    return Template().qa_min_score


def job_checks(job_dir: Path | None) -> dict[str, Any]:
    """The job page's QA section: its pages' last checks, worst first (at most
    ``MAX_ROWS``), the threshold and how many fell below it."""
    checks = sorted(read_checks(job_dir), key=lambda c: (c.score, c.page))
    threshold = min_score(job_dir) if checks else 0.0
    rows = []
    for c in checks[:MAX_ROWS]:
        capture, _, replay = c.shots.partition(",")
        ok = re.match(SHOT_NAME, capture) and re.match(SHOT_NAME, replay)
        rows.append({"check": c, "capture": capture if ok else "", "replay": replay if ok else ""})
    return {
        "rows": rows,
        "pages": len(checks),
        "below": sum(1 for c in checks if c.below(threshold)),
        "min_score": threshold,
    }


def domain_scores(conn: sa.Connection, domain: str, limit: int = 50) -> list[dict[str, Any]]:
    """The latest score of each checked page of ``domain`` (its host or a subdomain's), from
    the QA reports stored with the jobs, newest job first; at most ``limit`` pages."""
    rows = conn.execute(
        sa.text(
            "SELECT r.job_id, r.content FROM job_reports r"
            " WHERE r.name = :n AND r.job_id IN (SELECT hi.job_id FROM historyinfo hi"
            " JOIN configurations c USING (config_id) JOIN domains d USING (domain_id)"
            " WHERE d.name = :d) ORDER BY r.job_id DESC LIMIT 20"
        ),
        {"n": QA_REPORT, "d": domain},
    ).all()
    latest: dict[str, dict[str, Any]] = {}
    for job_id, content in rows:
        for c in parse_checks(str(content)):
            host = host_of(c.page)
            in_domain = host == domain or host.endswith("." + domain)
            if in_domain and c.page not in latest:
                latest[c.page] = {"job_id": job_id, "page": c.page, "score": c.score}
    return sorted(latest.values(), key=lambda r: (r["score"], r["page"]))[:limit]


def add_routes(
    app: FastAPI,
    job_dir_of: Callable[[int], Path | None],
    png: Callable[[bytes], Response],
) -> None:
    """``GET /jobs/{id}/qa-shots/{name}``: a screenshot a QA check compared."""

    @app.get("/jobs/{job_id}/qa-shots/{name}")
    def qa_shot(job_id: Annotated[int, PathParam(ge=0)], name: ShotName) -> Response:
        job_dir = job_dir_of(job_id)
        if job_dir is None:
            raise HTTPException(404, f"no job {job_id} (or no directory yet)")
        try:
            data = inside(JobDir(job_dir).reports, QA_SHOTS, name).read_bytes()
        except (OSError, ValueError):
            raise HTTPException(404, f"no QA screenshot {name} in job {job_id}") from None
        return png(data)
