"""Watched targets: the crawl feed's ``watched`` records, whose crawls the document step reads.

Why the mark travels on the configuration: a job is made of configurations, and a
configuration's attributes are copied into the job's template (``harvest.planning``), which the
crawler reads while ignoring keys it does not know. So a watched record's configuration carries
``{"documents": {"records": [...], "url_schemes": [...]}}`` (set by the transfer), every job
harvesting it carries the same in ``jobs.template``, and the document step
(``indexing.documents``) asks :func:`watched_jobs` which of its files' jobs to read — no second
list of jobs to keep in step with the selection.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.selection.mapping import ConfigChoice

ATTRIBUTE = "documents"  # the key in configurations.attributes and jobs.template


@dataclass(frozen=True)
class WatchedJob:
    """A job that harvested watched records: which, and their document URL schemes."""

    job_id: int
    record_ids: tuple[int, ...]
    url_schemes: tuple[str, ...]


@dataclass(frozen=True)
class WatchedTarget:
    """A watched record as the document step and its pages show it."""

    record_id: int
    title: str | None
    seed_url: str
    urls: tuple[str, ...]
    url_scheme: str | None


def mark(choice: ConfigChoice, row: Any, before: ConfigChoice | None) -> ConfigChoice:
    """``choice`` with the ``documents`` attribute of ``before`` (the same configuration for an
    earlier record) and the record ``row`` if watched: watched when any of its records is."""
    earlier = dict((before.attributes if before else {}).get(ATTRIBUTE) or {})
    records = set(earlier.get("records", []))
    schemes = set(earlier.get("url_schemes", []))
    if row.watched:
        records.add(int(row.record_id))
        if row.document_url_scheme:
            schemes.add(row.document_url_scheme)
    if not records:
        return choice
    attributes = {
        **choice.attributes,
        ATTRIBUTE: {"records": sorted(records), "url_schemes": sorted(schemes)},
    }
    return replace(choice, attributes=attributes)


def watched_jobs(conn: Connection, job_ids: list[int]) -> dict[int, WatchedJob]:
    """Those of ``job_ids`` that harvested watched records (their template carries the mark)."""
    if not job_ids:
        return {}
    rows = conn.execute(
        sa.text(
            "SELECT job_id, template -> :a AS mark FROM jobs"
            " WHERE job_id = ANY(CAST(:ids AS bigint[])) AND template ? :a"
        ),
        {"a": ATTRIBUTE, "ids": job_ids},
    ).all()
    found = {}
    for row in rows:
        mark_ = row.mark if isinstance(row.mark, dict) else {}
        records = tuple(int(r) for r in mark_.get("records") or [])
        if records:
            schemes = tuple(str(s) for s in mark_.get("url_schemes") or [])
            found[int(row.job_id)] = WatchedJob(int(row.job_id), records, schemes)
    return found


def watched_targets(conn: Connection, record_ids: list[int] | None = None) -> list[WatchedTarget]:
    """The watched records (all, or those of ``record_ids``), in record order."""
    rows = conn.execute(
        sa.text(
            "SELECT record_id, title, seed_url, supplementary_urls, document_url_scheme"
            " FROM selection_records WHERE watched"
            " AND (CAST(:ids AS integer[]) IS NULL OR record_id = ANY(CAST(:ids AS integer[])))"
            " ORDER BY record_id"
        ),
        {"ids": record_ids},
    ).all()
    return [
        WatchedTarget(
            r.record_id,
            r.title,
            r.seed_url,
            (r.seed_url, *(r.supplementary_urls or [])),
            r.document_url_scheme,
        )
        for r in rows
    ]
