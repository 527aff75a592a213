"""The index manifest (table ``index_manifest``): one row per WARC going through the chain.

Why in the database: ingest must know which files it already took in, cleanup must know which
files are safely stored elsewhere, and an operator must see where each file stands. Every write is
an idempotent UPDATE/UPSERT keyed by file name, so a retried module repeats it harmlessly.

Stages: ingested → indexed → transferred → backedup (only with a backup) → done;
``quarantined`` for damaged or non-WARC files (with ``error`` saying where and why).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from crawler.salvage import was_salvaged
from harvest import jobs
from harvestflow.formats.job_status import JobStatus

STAGES = ("ingested", "indexed", "transferred", "backedup", "done", "quarantined")


@dataclass
class Entry:
    file_name: str
    job_id: int | None
    harvest_id: int | None
    source_path: str
    size: int | None
    sha1: str | None
    stage: str
    worker: str | None
    cdx_path: str | None
    final_path: str | None
    backup_location: str | None
    quarantined: bool
    error: str | None
    collection: str
    records: int | None
    ingested_at: datetime | None = None
    source_deleted_at: datetime | None = None


_COLUMNS = (
    "file_name, job_id, harvest_id, source_path, size, sha1, stage, worker, cdx_path, final_path,"
    " backup_location, quarantined, error, collection, records, ingested_at, source_deleted_at"
)


def get(engine: Engine, file_name: str) -> Entry | None:
    with engine.connect() as conn:
        row = (
            conn.execute(
                sa.text(f"SELECT {_COLUMNS} FROM index_manifest WHERE file_name = :f"),
                {"f": file_name},
            )
            .mappings()
            .first()
        )
    return Entry(**row) if row else None


def known_names(engine: Engine, names: list[str]) -> set[str]:
    if not names:
        return set()
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT file_name FROM index_manifest WHERE file_name = ANY(:n)"), {"n": names}
        )
        return {r[0] for r in rows}


def insert(engine: Engine, **values: Any) -> bool:
    """Register a newly ingested file; False when it was already there (a repeated ingest)."""
    cols = ", ".join(values)
    params = ", ".join(f":{k}" for k in values)
    with engine.begin() as conn:
        res = conn.execute(
            sa.text(
                f"INSERT INTO index_manifest ({cols}) VALUES ({params})"
                " ON CONFLICT (file_name) DO NOTHING"
            ),
            values,
        )
        return bool(res.rowcount)


def update(engine: Engine, file_name: str, **values: Any) -> None:
    """Set columns; ``<col>_at=True`` means now() (the database clock)."""
    sets = []
    params: dict[str, Any] = {"f": file_name}
    for key, value in values.items():
        if key.endswith("_at") and value is True:
            sets.append(f"{key} = now()")
        else:
            sets.append(f"{key} = :{key}")
            params[key] = value
    with engine.begin() as conn:
        conn.execute(
            sa.text(f"UPDATE index_manifest SET {', '.join(sets)} WHERE file_name = :f"), params
        )


def in_stages(engine: Engine, stages: tuple[str, ...]) -> list[Entry]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                f"SELECT {_COLUMNS} FROM index_manifest WHERE stage = ANY(:s) ORDER BY file_name"
            ),
            {"s": list(stages)},
        ).mappings()
        return [Entry(**r) for r in rows]


def existing_job(engine: Engine, job_id: int | None) -> int | None:
    """``job_id`` when the jobs table has it, else None (a file from elsewhere)."""
    if job_id is None:
        return None
    with engine.connect() as conn:
        return job_id if jobs.job_exists(conn, job_id) else None


def finished_jobs(engine: Engine) -> list[tuple[int, int, str]]:
    """(job_id, harvest_id, job_dir) of the jobs whose WARCs are final.

    DONE jobs, and RESUBMITTED jobs whose dead crawl's partial output was salvaged
    (summary.json marked "salvaged": ``.open`` WARCs repaired, metadata WARC written), so that
    what a dead worker collected is indexed too. A RESUBMITTED job never salvaged may hold an
    ``.open`` file cut mid-record: it is left alone.
    """
    with engine.connect() as conn:
        rows = jobs.final_job_rows(conn)
    return [(r[0], r[1], r[2]) for r in rows if r[3] == JobStatus.DONE or was_salvaged(r[2])]


def file_locations(conn: sa.Connection) -> list[Any]:
    """(file_name, stage, final_path) of every file of the manifest, by name."""
    return list(
        conn.execute(
            sa.text("SELECT file_name, stage, final_path FROM index_manifest ORDER BY file_name")
        ).all()
    )


def jobs_with_final_files(conn: sa.Connection, job_ids: list[int]) -> set[int]:
    """Those of ``job_ids`` whose metadata WARC is in the manifest and all of whose files are in
    the repository (copied and checked: ``FINAL_STAGES``), none quarantined."""
    rows = conn.execute(
        sa.text(
            "SELECT m.job_id FROM index_manifest m WHERE m.job_id = ANY(:j) GROUP BY m.job_id"
            " HAVING bool_or(m.file_name ~ ('^' || m.job_id || '-metadata-[0-9]+\\.warc(\\.gz)?$'))"
            " AND NOT bool_or(m.final_path IS NULL OR m.quarantined"
            "                 OR m.stage NOT IN ('transferred', 'backedup', 'done'))"
        ),
        {"j": job_ids},
    )
    return {int(r[0]) for r in rows}


def jobs_in_manifest(conn: sa.Connection, job_ids: list[int]) -> set[int]:
    """Those of ``job_ids`` that have at least one file in the manifest."""
    rows = conn.execute(
        sa.text("SELECT DISTINCT job_id FROM index_manifest WHERE job_id = ANY(:j)"),
        {"j": job_ids},
    )
    return {int(r[0]) for r in rows}


def job_file_rows(conn: sa.Connection, job_id: int) -> list[Any]:
    """(file_name, final_path, quarantined, stage, size) of the job's files, by name."""
    return list(
        conn.execute(
            sa.text(
                "SELECT file_name, final_path, quarantined, stage, size FROM index_manifest"
                " WHERE job_id = :j ORDER BY file_name"
            ),
            {"j": job_id},
        ).all()
    )


def cdx_paths_of_jobs(conn: sa.Connection, job_ids: list[int]) -> list[str]:
    """The per-file CDX files recorded for these jobs' WARCs, by path."""
    return list(
        conn.execute(
            sa.text(
                "SELECT DISTINCT cdx_path FROM index_manifest"
                " WHERE job_id = ANY(CAST(:j AS bigint[])) AND cdx_path IS NOT NULL ORDER BY 1"
            ),
            {"j": job_ids},
        ).scalars()
    )


def file_copies(conn: sa.Connection, names: list[str]) -> dict[str, tuple[str | None, str | None]]:
    """File name → (final copy's path, the job's own path) of these WARCs."""
    rows = conn.execute(
        sa.text(
            "SELECT file_name, final_path, source_path FROM index_manifest"
            " WHERE file_name = ANY(:n)"
        ),
        {"n": names},
    )
    return {str(name): (final, source) for name, final, source in rows}
