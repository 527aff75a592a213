"""The QA, preload and preservation pages' data: the stages' views (qa.views,
harvest.preload.views, preservation.views) and the files they name.

Why here: these pages also read the stage outputs (QA report folders, preload
run folders) as well as the database; every file is reached through a directory recorded in
the database and checked with :func:`app.curator.jobfiles.inside`.
"""

from __future__ import annotations

import base64
import csv
import io
import logging
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.curator.jobfiles import MAX_REPORT_ROWS, Table, inside
from harvest.preload import views as preload_views
from harvestflow.formats.csvcells import safe_row
from harvestflow.paged import Page
from preservation import views as preservation_views
from qa import views as qa_views

log = logging.getLogger(__name__)


def qa_days(conn: sa.Connection, page: int = 1, size: int = 50) -> Page:
    """Days with a QA report, newest first (qa.views)."""
    return qa_views.report_days(conn, page, size)


def qa_day(conn: sa.Connection, day: str) -> dict[str, Any] | None:
    """One day's QA report: summary, chart file names, CSV tables (from its folder)."""
    report = qa_views.report_of_day(conn, day)
    if report is None:
        return None
    folder = Path(report["report_dir"])
    summary = report["summary"] or {}
    stored = set(summary.get("charts_svg") or {}) | set(summary.get("charts_png_base64") or {})
    files = (folder / "charts").iterdir() if (folder / "charts").is_dir() else iter(())
    report["charts"] = sorted({p.name for p in files if p.suffix in CHART_TYPES} | stored)
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


# a QA report's charts: SVG since the report stopped drawing with matplotlib; the PNGs of the
# reports written before stay readable
CHART_TYPES = {".svg": "image/svg+xml", ".png": "image/png"}


def stored_chart(report: dict[str, Any], name: str) -> bytes | None:
    """The copy of chart ``name`` the database keeps (SVG text; base64 PNG of older reports)."""
    summary = report["summary"] or {}
    svg = (summary.get("charts_svg") or {}).get(name)
    if svg is not None:
        return str(svg).encode("utf-8")
    png = (summary.get("charts_png_base64") or {}).get(name)
    return base64.b64decode(png) if png is not None else None


def qa_chart_path(report_dir: str, name: str) -> Path:
    """A chart (SVG, or PNG of an older report) of a QA report folder (ValueError if the name
    is no chart or leaves charts/)."""
    if Path(name).suffix not in CHART_TYPES:
        raise ValueError(f"{name!r} is not a chart")
    return inside(Path(report_dir), "charts", name)


def preload_runs(conn: sa.Connection, page: int = 1, size: int = 50) -> Page:
    """Broad-crawl preload runs, newest first (harvest.preload.views)."""
    return preload_views.runs(conn, page, size)


def preload_run(
    conn: sa.Connection, run_id: str, data_dir: Path, page: int = 1, size: int = 100
) -> dict[str, Any] | None:
    """One preload run: sources, report text, DNS checks (paginated), redirects found."""
    run = preload_views.run(conn, run_id, page, size)
    if run is None:
        return None
    run["report_text"] = ""
    try:
        report = inside(data_dir / "preload", run_id, "report.txt")
        run["report_text"] = report.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError) as exc:
        log.info("preload run %s: no report file (%s)", run_id, exc)
    return run


def preservation(conn: sa.Connection, page: int = 1, size: int = 50) -> dict[str, Any]:
    """Package and file counts by status, the manual queue, packages (preservation.views)."""
    return preservation_views.overview(conn, page, size)


def csv_text(table: Table) -> str:
    """A table back as CSV text (downloads; formulas escaped for spreadsheets)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(safe_row(table.columns))
    writer.writerows(safe_row(row) for row in table.rows)
    return out.getvalue()
