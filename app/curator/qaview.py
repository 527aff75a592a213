"""The capture-vs-replay QA of a job's rendered pages, where curators look: the job page's
table (worst page first, the capture's and the replay's screenshots side by side, the URLs
still missing) and the screenshots' route; the latest score of a domain's pages (the domain
page and the selection record).

Why read from the job's directory (harvestflow.contracts.qa_report): the crawler writes the
reports and screenshots as it checks pages, so a running job's page shows its scores as they
come.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException
from fastapi import Path as PathParam
from fastapi.responses import Response

from app.curator.jobfiles import inside
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.jobspec import JobSpec
from harvestflow.contracts.qa_report import (
    QA_SHOTS,
    read_checks,
)

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
