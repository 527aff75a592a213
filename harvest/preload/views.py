"""Read-only views of the preload's tables for the curator pages: runs with their DNS classes,
one run's sources, DNS checks (paginated) and redirects found."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from harvestflow.paged import Page, page_of, rows_of


def runs(conn: sa.Connection, page: int = 1, size: int = 50) -> Page:
    """Broad-crawl preload runs, newest first, with DNS class counts."""
    return page_of(
        conn,
        "SELECT count(*) FROM preload_runs",
        "SELECT r.run_id, r.started_at, r.finished_at,"
        " (SELECT count(*) FROM dns_checks d WHERE d.run_id = r.run_id AND class = 'active')"
        "   AS active,"
        " (SELECT count(*) FROM dns_checks d WHERE d.run_id = r.run_id AND class = 'failed')"
        "   AS failed,"
        " (SELECT count(*) FROM dns_checks d WHERE d.run_id = r.run_id AND class = 'unknown')"
        "   AS unknown"
        " FROM preload_runs r ORDER BY r.started_at DESC",
        page,
        size,
    )


def run(conn: sa.Connection, run_id: str, page: int = 1, size: int = 100) -> dict[str, Any] | None:
    """One preload run: its row, sources, DNS checks (paginated), redirects found."""
    rows = rows_of(conn, "SELECT * FROM preload_runs WHERE run_id = :r", r=run_id)
    if not rows:
        return None
    found = rows[0]
    found["sources"] = rows_of(
        conn, "SELECT * FROM preload_sources WHERE run_id = :r ORDER BY source_name", r=run_id
    )
    found["dns"] = page_of(
        conn,
        "SELECT count(*) FROM dns_checks WHERE run_id = :r",
        "SELECT domain, class, detail, checked_at FROM dns_checks WHERE run_id = :r"
        " ORDER BY class DESC, domain",
        page,
        size,
        r=run_id,
    )
    found["redirects"] = rows_of(
        conn,
        "SELECT url, status, location, target_domain FROM redirect_checks WHERE run_id = :r"
        " AND location IS NOT NULL ORDER BY url LIMIT 500",
        r=run_id,
    )
    if isinstance(found.get("report"), str):
        found["report"] = json.loads(found["report"])
    return found
