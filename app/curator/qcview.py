"""What the job and domain pages show of the curators' visual QC loop, and the patch form's input.

Why its own module: the pages only link into the replay service's per-job views
(:mod:`access.jobviews`) and list what :mod:`access.missing` recorded; the patch itself is
:func:`access.patches.request_patch`. This module builds the links (a job's seeds at the job's
start time; a domain's captures in one job) and reads the job's QC state for the template.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from access import missing

MAX_SEED_LINKS = 20


def _timestamp(value: Any) -> str:
    """pywb's 14-digit UTC timestamp of a datetime (the nearest capture is replayed); '' none."""
    if not isinstance(value, datetime):
        return ""
    return (value.astimezone(UTC) if value.tzinfo else value).strftime("%Y%m%d%H%M%S")


def seed_links(access_url: str, job: dict[str, Any]) -> list[dict[str, str]]:
    """ "View this capture": each of the job's first seeds in the job's own view."""
    coll = missing.job_collection(job["job_id"])
    when = _timestamp(job.get("startdate")) or _timestamp(job.get("submitteddate")) or "*"
    seeds = [s.strip() for s in str(job.get("seedlist") or "").splitlines() if s.strip()]
    return [
        {"seed": seed, "href": f"{access_url}{coll}/{when}/{seed}"}
        for seed in seeds[:MAX_SEED_LINKS]
    ]


def domain_link(access_url: str, job_id: int, domain: str) -> str:
    """The job view's list of every capture under the domain (pywb's prefix query)."""
    return f"{access_url}{missing.job_collection(job_id)}/*/{domain}/*"


def job_qc(conn: sa.Connection, access_url: str, job: dict[str, Any]) -> dict[str, Any]:
    """The job page's QC section: view links, missing URLs, patch harvests sent."""
    job_id = int(job["job_id"])
    return {
        "collection": missing.job_collection(job_id),
        "links": seed_links(access_url, job),
        "missing": missing.for_job(conn, job_id),
        "patches": missing.patches_of(conn, job_id),
    }


def chosen_urls(fields: dict[str, list[str]]) -> list[str] | None:
    """The patch form's URLs (``fields``: every value of each field): the ticked ``url``
    boxes, or None for "all not sent yet"."""
    if fields.get("all"):
        return None
    return [u for u in fields.get("url", []) if u.strip()]
