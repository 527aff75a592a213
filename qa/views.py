"""Read-only views of the QA tables for the curator pages: the days with a report, one day's row.
The report's files (charts, CSV tables) are read by the pages from the folder named here."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from harvestflow.paged import Page, page_of, rows_of


def report_days(conn: sa.Connection, page: int = 1, size: int = 50) -> Page:
    """Days with a QA report, newest first, with their headline figures.

    Only a few keys of ``summary`` are selected: it also carries the report's charts (base64).
    """
    return page_of(
        conn,
        "SELECT count(*) FROM qa_reports",
        "SELECT day, generated_at, summary->'jobs' AS jobs, summary->'logs' AS logs,"
        " jsonb_array_length(COALESCE(summary->'problems', '[]'::jsonb)) AS problems"
        " FROM qa_reports ORDER BY day DESC",
        page,
        size,
    )


def report_of_day(conn: sa.Connection, day: str) -> dict[str, Any] | None:
    """One day's report row (day, generated_at, report_dir, summary), or None."""
    rows = rows_of(
        conn,
        "SELECT day, generated_at, report_dir, summary FROM qa_reports"
        " WHERE day = CAST(:day AS date)",
        day=day,
    )
    return rows[0] if rows else None
