"""Selection records as the curator pages read them: search with paging, one record, its
history, and the search exported as CSV in the import's format.

Why the import's columns: a record shown in the edit form and a line of an export are the same
row of ``records.CSV_COLUMNS`` (:func:`as_row`), so an export imports back to the same records
and a form is read by the import's own code (:mod:`editing`).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.selection.records import CSV_COLUMNS
from harvestflow.formats.csvcells import safe_cell

STATUSES = ("active", "inactive")
VALIDATIONS = ("valid", "warning", "unchecked", "invalid")
MAX_PAGE = 500


@dataclass(frozen=True)
class RecordFilter:
    """A search of the records list (empty values: no condition)."""

    q: str = ""  # part of the seed URL or the title
    collection: str = ""
    frequency: str = ""
    status: str = ""  # active / inactive
    validation: str = ""  # valid / warning / unchecked / invalid
    curator: str = ""
    theme: str = ""  # the record's theme, any case
    keyword: str = ""  # one of the record's keywords, any case

    def where(self) -> tuple[str, dict[str, Any]]:
        """The WHERE clause and its parameters (every value bound)."""
        clauses, params = ["TRUE"], {}
        if self.q.strip():
            clauses.append("(seed_url ILIKE :q OR COALESCE(title, '') ILIKE :q)")
            escaped = self.q.strip().replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_")
            params["q"] = f"%{escaped}%"
        for name in ("collection", "frequency", "curator"):
            value = getattr(self, name).strip()
            if value:
                clauses.append(f"{name} = :{name}")
                params[name] = value
        if self.theme.strip():
            clauses.append("lower(theme) = lower(:theme)")
            params["theme"] = self.theme.strip()
        if self.keyword.strip():
            clauses.append(
                "EXISTS (SELECT 1 FROM unnest(keywords) AS k WHERE lower(k) = lower(:keyword))"
            )
            params["keyword"] = self.keyword.strip()
        if self.status in STATUSES:
            clauses.append("active" if self.status == "active" else "NOT active")
        if self.validation in VALIDATIONS:
            clauses.append("COALESCE(validation_status, 'unchecked') = :validation")
            params["validation"] = self.validation
        return " AND ".join(clauses), params


def search_records(
    conn: Connection, flt: RecordFilter, page_no: int = 1, size: int = 50
) -> tuple[list[dict[str, Any]], int]:
    """One page of the records matching ``flt`` (by id) and how many match in all."""
    where, params = flt.where()
    size = min(max(size, 1), MAX_PAGE)
    rows = conn.execute(
        sa.text(
            "SELECT record_id, external_id, collection, title, seed_url, budget, frequency,"
            " depth, active, curator, created_at, modified_at, modified_by, validation_status,"
            " validation_detail, transferred_at, count(*) OVER () AS total"
            f" FROM selection_records WHERE {where} ORDER BY record_id LIMIT :n OFFSET :o"
        ),
        {**params, "n": size, "o": (max(page_no, 1) - 1) * size},
    ).all()
    total = int(rows[0].total) if rows else _count(conn, flt)
    return [dict(r._mapping) for r in rows], total


def _count(conn: Connection, flt: RecordFilter) -> int:
    where, params = flt.where()
    return int(
        conn.execute(
            sa.text(f"SELECT count(*) FROM selection_records WHERE {where}"), params
        ).scalar_one()
    )


def collections(conn: Connection) -> list[str]:
    """The collections records are in (for the move form)."""
    rows = conn.execute(sa.text("SELECT DISTINCT collection FROM selection_records ORDER BY 1"))
    return [r[0] for r in rows]


def get_record(conn: Connection, record_id: int) -> dict[str, Any] | None:
    row = conn.execute(
        sa.text("SELECT * FROM selection_records WHERE record_id = :r"), {"r": record_id}
    ).first()
    return dict(row._mapping) if row else None


def as_row(record: dict[str, Any]) -> dict[str, str]:
    """A stored record as the import's CSV columns (the form's fields, an export's line)."""
    sched = (record.get("schedules") or [{}])[0]
    return {
        "id": record.get("external_id") or "",
        "collection": record["collection"],
        "title": record.get("title") or "",
        "seed_url": record["seed_url"],
        "supplementary_urls": " ".join(record.get("supplementary_urls") or []),
        "budget": record["budget"],
        "frequency": record["frequency"],
        "depth": record["depth"],
        "active": "yes" if record["active"] else "no",
        "theme": record["theme"],
        "keywords": "; ".join(record.get("keywords") or []),
        "content_notes": record.get("content_notes") or "",
        "technical_notes": record.get("technical_notes") or "",
        "creator": record.get("creator") or "",
        "curator": record.get("curator") or "",
        "ignore_robots": "yes" if record.get("ignore_robots") else "no",
        "start_date": str(sched.get("startDate") or ""),
        "end_date": str(sched.get("endDate") or ""),
        "watched": "yes" if record.get("watched") else "no",
        "document_url_scheme": record.get("document_url_scheme") or "",
    }


def export_csv(conn: Connection, flt: RecordFilter) -> str:
    """Every record of the search (no paging) as a CSV file in the import's format."""
    where, params = flt.where()
    rows = conn.execute(
        sa.text(f"SELECT * FROM selection_records WHERE {where} ORDER BY record_id"), params
    )
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:  # text a spreadsheet would run as a formula is escaped (read back as is)
        writer.writerow({k: safe_cell(v) for k, v in as_row(dict(row._mapping)).items()})
    return out.getvalue()


def record_history(conn: Connection, record_id: int) -> list[dict[str, Any]]:
    """The record's changes, newest first."""
    rows = conn.execute(
        sa.text(
            "SELECT changed_at, changed_by, field, old_value, new_value FROM selection_history"
            " WHERE record_id = :r ORDER BY change_id DESC"
        ),
        {"r": record_id},
    )
    return [dict(r._mapping) for r in rows]


def collections_of(conn: Connection, record_ids: list[int]) -> dict[int, str]:
    """The collection of each record that exists (a rights check before a write)."""
    rows = conn.execute(
        sa.text(
            "SELECT record_id, collection FROM selection_records"
            " WHERE record_id = ANY(CAST(:ids AS integer[]))"
        ),
        {"ids": list(record_ids)},
    ).all()
    return {int(r.record_id): str(r.collection) for r in rows}


def seed_urls_of(conn: Connection, record_ids: list[int]) -> dict[int, str]:
    """The seed URL of each record that exists (a curated collection's targets)."""
    rows = conn.execute(
        sa.text(
            "SELECT record_id, seed_url FROM selection_records"
            " WHERE record_id = ANY(CAST(:ids AS integer[]))"
        ),
        {"ids": list(record_ids)},
    ).all()
    return {int(r.record_id): str(r.seed_url) for r in rows}
