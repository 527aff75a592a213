"""Read-only views of the preservation tables for the curator pages: package and file counts by
status, the manual queue and the packages, each named by its harvest definition (read through
harvest.views: the definitions are harvest's)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from harvest.views import definition_names
from harvestflow.paged import page_of, rows_of


def overview(conn: sa.Connection, page: int = 1, size: int = 50) -> dict[str, Any]:
    """Package and file counts by status, the manual queue, packages (paginated)."""
    manual = rows_of(
        conn,
        "SELECT p.job_id, p.harvest_id, p.ark, p.error, p.finished_at AS since,"
        " (SELECT string_agg(f.file_name || ': ' || coalesce(f.error, ''), '; '"
        "   ORDER BY f.file_name) FROM preservation_files f"
        "   WHERE f.job_id = p.job_id AND f.status = 'manual') AS files"
        " FROM preservation_packages p"
        " WHERE p.status = 'manual' ORDER BY p.finished_at, p.job_id",
    )
    packages = page_of(
        conn,
        "SELECT count(*) FROM preservation_packages",
        "SELECT p.job_id, p.harvest_id, p.ark, p.status, p.staged_at, p.finished_at,"
        " (SELECT count(*) FROM preservation_files f WHERE f.job_id = p.job_id) AS files,"
        " (SELECT count(*) FROM preservation_files f WHERE f.job_id = p.job_id"
        "   AND f.status = 'verified') AS verified"
        " FROM preservation_packages p"
        " ORDER BY p.job_id DESC",
        page,
        size,
    )
    names = definition_names(conn, [r["harvest_id"] for r in manual + packages.rows])
    for row in manual + packages.rows:
        row["harvest_name"] = names.get(row["harvest_id"])
    return {
        "package_status": rows_of(
            conn,
            "SELECT status, count(*) AS n FROM preservation_packages GROUP BY status"
            " ORDER BY status",
        ),
        "file_status": rows_of(
            conn,
            "SELECT status, count(*) AS n, coalesce(sum(size), 0) AS bytes"
            " FROM preservation_files GROUP BY status ORDER BY status",
        ),
        "manual": manual,
        "packages": packages,
    }
