"""Read-only queries and file readers for the QA, preload and preservation pages.

Why separate from ``queries``: these pages read the stage outputs (QA report folders, preload
run folders) as well as the database; every file is reached through a directory recorded in
the database and checked with :func:`app.curator.jobfiles.inside`.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.curator.jobfiles import MAX_REPORT_ROWS, Table, inside
from harvest.views import Page, _page, _rows
from harvestflow.formats.csvcells import safe_row
from harvestflow.formats.job_status import JobStatus

log = logging.getLogger(__name__)


def qa_days(conn: sa.Connection, page: int = 1, size: int = 50) -> Page:
    """Days with a QA report, newest first, with their headline figures.

    Only a few keys of ``summary`` are selected: it also carries the report's charts (base64).
    """
    return _page(
        conn,
        "SELECT count(*) FROM qa_reports",
        "SELECT day, generated_at, summary->'jobs' AS jobs, summary->'logs' AS logs,"
        " jsonb_array_length(COALESCE(summary->'problems', '[]'::jsonb)) AS problems"
        " FROM qa_reports ORDER BY day DESC",
        page,
        size,
    )


def qa_day(conn: sa.Connection, day: str) -> dict[str, Any] | None:
    """One day's QA report: summary, chart file names, CSV tables (from its folder)."""
    rows = _rows(
        conn,
        "SELECT day, generated_at, report_dir, summary FROM qa_reports"
        " WHERE day = CAST(:day AS date)",
        day=day,
    )
    if not rows:
        return None
    report = rows[0]
    folder = Path(report["report_dir"])
    stored = (report["summary"] or {}).get("charts_png_base64") or {}
    report["charts"] = sorted({p.name for p in (folder / "charts").glob("*.png")} | set(stored))
    report["tables"] = [
        read_csv_table(folder, name)
        for name in ("jobs.csv", "domains.csv")
        if (folder / name).exists()
    ]
    report["families"] = stats_tables(folder)
    return report


def read_csv_table(folder: Path, name: str, max_rows: int = MAX_REPORT_ROWS) -> Table:
    """A CSV file of a report folder as a table (first ``max_rows`` rows)."""
    with inside(folder, name).open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        columns = next(reader, [])
        table = Table(name.removesuffix(".csv"), columns)
        for i, row in enumerate(reader):
            if i >= max_rows:
                table.truncated += 1
                continue
            table.rows.append(row)
    return table


def stats_tables(folder: Path) -> list[Table]:
    """stats.csv of the day scope, one small table per metric family."""
    path = folder / "stats.csv"
    if not path.exists():
        return []
    families: dict[str, Table] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row.get("scope") != "day":
                continue
            fam = row["family"]
            table = families.setdefault(fam, Table(fam, ["key", "value"]))
            if len(table.rows) < 200:
                table.rows.append([row["key"], _fmt(row["value"])])
            else:
                table.truncated += 1
    return list(families.values())


def _fmt(raw: str) -> str:
    try:
        value = float(raw)
    except ValueError:
        return raw
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.3f}"


def qa_chart_path(report_dir: str, name: str) -> Path:
    """A chart PNG of a QA report folder (ValueError if the name leaves charts/)."""
    if not name.endswith(".png"):
        raise ValueError(f"{name!r} is not a chart")
    return inside(Path(report_dir), "charts", name)


def preload_runs(conn: sa.Connection, page: int = 1, size: int = 50) -> Page:
    """Broad-crawl preload runs, newest first, with DNS class counts."""
    return _page(
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


def preload_run(
    conn: sa.Connection, run_id: str, data_dir: Path, page: int = 1, size: int = 100
) -> dict[str, Any] | None:
    """One preload run: sources, report text, DNS checks (paginated), redirects found."""
    rows = _rows(conn, "SELECT * FROM preload_runs WHERE run_id = :r", r=run_id)
    if not rows:
        return None
    run = rows[0]
    run["sources"] = _rows(
        conn, "SELECT * FROM preload_sources WHERE run_id = :r ORDER BY source_name", r=run_id
    )
    run["dns"] = _page(
        conn,
        "SELECT count(*) FROM dns_checks WHERE run_id = :r",
        "SELECT domain, class, detail, checked_at FROM dns_checks WHERE run_id = :r"
        " ORDER BY class DESC, domain",
        page,
        size,
        r=run_id,
    )
    run["redirects"] = _rows(
        conn,
        "SELECT url, status, location, target_domain FROM redirect_checks WHERE run_id = :r"
        " AND location IS NOT NULL ORDER BY url LIMIT 500",
        r=run_id,
    )
    run["report_text"] = ""
    try:
        report = inside(data_dir / "preload", run_id, "report.txt")
        run["report_text"] = report.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError) as exc:
        log.info("preload run %s: no report file (%s)", run_id, exc)
    if isinstance(run.get("report"), str):
        run["report"] = json.loads(run["report"])
    return run


def preservation(conn: sa.Connection, page: int = 1, size: int = 50) -> dict[str, Any]:
    """Package and file counts by status, the manual queue, packages (paginated)."""
    return {
        "package_status": _rows(
            conn,
            "SELECT status, count(*) AS n FROM preservation_packages GROUP BY status"
            " ORDER BY status",
        ),
        "file_status": _rows(
            conn,
            "SELECT status, count(*) AS n, coalesce(sum(size), 0) AS bytes"
            " FROM preservation_files GROUP BY status ORDER BY status",
        ),
        "manual": _rows(
            conn,
            "SELECT p.job_id, p.harvest_id, h.name AS harvest_name, p.ark, p.error,"
            " p.finished_at AS since,"
            " (SELECT string_agg(f.file_name || ': ' || coalesce(f.error, ''), '; '"
            "   ORDER BY f.file_name) FROM preservation_files f"
            "   WHERE f.job_id = p.job_id AND f.status = 'manual') AS files"
            " FROM preservation_packages p"
            " LEFT JOIN harvestdefinitions h ON h.harvest_id = p.harvest_id"
            " WHERE p.status = 'manual' ORDER BY p.finished_at, p.job_id",
        ),
        "packages": _page(
            conn,
            "SELECT count(*) FROM preservation_packages",
            "SELECT p.job_id, p.harvest_id, h.name AS harvest_name, p.ark, p.status,"
            " p.staged_at, p.finished_at,"
            " (SELECT count(*) FROM preservation_files f WHERE f.job_id = p.job_id) AS files,"
            " (SELECT count(*) FROM preservation_files f WHERE f.job_id = p.job_id"
            "   AND f.status = 'verified') AS verified"
            " FROM preservation_packages p"
            " LEFT JOIN harvestdefinitions h ON h.harvest_id = p.harvest_id"
            " ORDER BY p.job_id DESC",
            page,
            size,
        ),
    }


def overview(conn: sa.Connection) -> dict[str, Any]:
    """Headline counts for the index page."""
    row = (
        conn.execute(
            sa.text(
                "SELECT (SELECT count(*) FROM harvestdefinitions) AS definitions,"
                " (SELECT count(*) FROM jobs) AS jobs,"
                f" (SELECT count(*) FROM jobs WHERE status = {JobStatus.STARTED:d}) AS running,"
                " (SELECT count(*) FROM jobs"
                f" WHERE status IN ({JobStatus.FAILED:d}, {JobStatus.FAILED_REJECTED:d})) AS failed,"
                " (SELECT count(*) FROM domains) AS domains,"
                " (SELECT max(day) FROM qa_reports) AS last_qa,"
                " (SELECT count(*) FROM preservation_packages WHERE status = 'manual') AS manual"
            )
        )
        .mappings()
        .one()
    )
    from harvest.page_qa import flagged_jobs

    return {**row, "qa_flagged": flagged_jobs(conn)}  # recent runs whose pages fell below


def csv_text(table: Table) -> str:
    """A table back as CSV text (downloads; formulas escaped for spreadsheets)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(safe_row(table.columns))
    writer.writerows(safe_row(row) for row in table.rows)
    return out.getvalue()
