"""Preservation rows in the harvest DB: packages, files, events, the manual queue.

Why one module: every state change of an ingest goes through these few statements, so the rules
(UPSERTs for anything a retried task may repeat; a package is ``preserved`` only when every one of
its files is ``verified``; the manual queue is packages in status ``manual`` with their reason)
are written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from harvest.definitions import definition_names

PACKAGE_STATUSES = ("staged", "ingesting", "preserved", "manual")


@dataclass(frozen=True)
class FileRow:
    job_id: int
    file_name: str
    role: str
    size: int
    sha256: str
    sha512: str | None
    ark: str | None
    s3_key: str
    status: str
    attempts: int
    s3_checksum: str | None


def add_event(
    conn: sa.Connection, job_id: int, kind: str, detail: str = "", file_name: str | None = None
) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO preservation_events (job_id, file_name, kind, detail)"
            " VALUES (:j, :f, :k, :d)"
        ),
        {"j": job_id, "f": file_name, "k": kind, "d": detail},
    )


def get_package(conn: sa.Connection, job_id: int) -> dict[str, Any] | None:
    row = (
        conn.execute(
            sa.text("SELECT * FROM preservation_packages WHERE job_id = :j"), {"j": job_id}
        )
        .mappings()
        .first()
    )
    return dict(row) if row else None


def upsert_package(
    conn: sa.Connection, *, job_id: int, harvest_id: int, ark: str, bag_path: str, s3_prefix: str
) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO preservation_packages (job_id, harvest_id, ark, bag_path, s3_prefix)"
            " VALUES (:j, :h, :a, :b, :p)"
            " ON CONFLICT (job_id) DO UPDATE SET bag_path = EXCLUDED.bag_path,"
            " s3_prefix = EXCLUDED.s3_prefix, ark = EXCLUDED.ark"
        ),
        {"j": job_id, "h": harvest_id, "a": ark, "b": bag_path, "p": s3_prefix},
    )


def upsert_file(
    conn: sa.Connection,
    *,
    job_id: int,
    file_name: str,
    role: str,
    size: int,
    sha256: str,
    sha512: str | None,
    ark: str | None,
    s3_key: str,
) -> None:
    """Insert a file row; a row not yet verified gets the new staging values, a verified one not."""
    conn.execute(
        sa.text(
            "INSERT INTO preservation_files"
            " (job_id, file_name, role, size, sha256, sha512, ark, s3_key)"
            " VALUES (:j, :n, :r, :s, :h256, :h512, :a, :k)"
            " ON CONFLICT (job_id, file_name) DO UPDATE SET role = EXCLUDED.role,"
            " size = EXCLUDED.size, sha256 = EXCLUDED.sha256, sha512 = EXCLUDED.sha512,"
            " ark = EXCLUDED.ark, s3_key = EXCLUDED.s3_key, status = 'pending', error = NULL"
            " WHERE preservation_files.status <> 'verified'"
        ),
        {
            "j": job_id,
            "n": file_name,
            "r": role,
            "s": size,
            "h256": sha256,
            "h512": sha512,
            "a": ark,
            "k": s3_key,
        },
    )


_ROLE_ORDER = (
    "CASE role WHEN 'metadata' THEN 0 WHEN 'data' THEN 1 ELSE 2 END,"
    " CASE WHEN file_name LIKE 'tagmanifest-%' THEN 1 ELSE 0 END, file_name COLLATE \"C\""
)


def files_of(conn: sa.Connection, job_id: int) -> list[FileRow]:
    """The package's files in ingest order: metadata, data WARCs, tag files (tagmanifest last)."""
    rows = conn.execute(
        sa.text(
            "SELECT job_id, file_name, role, size, sha256, sha512, ark, s3_key, status, attempts,"
            f" s3_checksum FROM preservation_files WHERE job_id = :j ORDER BY {_ROLE_ORDER}"
        ),
        {"j": job_id},
    ).all()
    return [FileRow(*r) for r in rows]


def set_package_status(
    conn: sa.Connection, job_id: int, status: str, error: str | None = None
) -> None:
    if status not in PACKAGE_STATUSES:
        raise ValueError(f"unknown package status {status!r}")
    extra = ""
    if status == "ingesting":
        extra = ", started_at = COALESCE(started_at, now()), finished_at = NULL"
    elif status in ("preserved", "manual"):
        extra = ", finished_at = now()"
    elif status == "staged":
        extra = ", started_at = NULL, finished_at = NULL, staged_at = now()"
    conn.execute(
        sa.text(
            f"UPDATE preservation_packages SET status = :s, error = :e{extra} WHERE job_id = :j"
        ),
        {"s": status, "e": error, "j": job_id},
    )


def file_attempt(conn: sa.Connection, job_id: int, name: str) -> None:
    conn.execute(
        sa.text(
            "UPDATE preservation_files SET attempts = attempts + 1"
            " WHERE job_id = :j AND file_name = :n"
        ),
        {"j": job_id, "n": name},
    )


def file_uploaded(conn: sa.Connection, job_id: int, name: str, s3_checksum: str | None) -> None:
    conn.execute(
        sa.text(
            "UPDATE preservation_files SET status = 'uploaded', s3_checksum = :c,"
            " uploaded_at = COALESCE(uploaded_at, now()), error = NULL"
            " WHERE job_id = :j AND file_name = :n AND status <> 'verified'"
        ),
        {"j": job_id, "n": name, "c": s3_checksum},
    )


def file_verified(
    conn: sa.Connection, job_id: int, name: str, *, reread: bool, seconds: float
) -> None:
    conn.execute(
        sa.text(
            "UPDATE preservation_files SET status = 'verified', verified_at = now(),"
            " reread = :r, upload_seconds = :t, error = NULL"
            " WHERE job_id = :j AND file_name = :n AND status <> 'verified'"
        ),
        {"j": job_id, "n": name, "r": reread, "t": seconds},
    )


def file_error(conn: sa.Connection, job_id: int, name: str, status: str, error: str) -> None:
    conn.execute(
        sa.text(
            "UPDATE preservation_files SET status = :s, error = :e"
            " WHERE job_id = :j AND file_name = :n AND status <> 'verified'"
        ),
        {"j": job_id, "n": name, "s": status, "e": error},
    )


def file_local_deleted(conn: sa.Connection, job_id: int, name: str) -> None:
    conn.execute(
        sa.text(
            "UPDATE preservation_files SET local_deleted_at = now()"
            " WHERE job_id = :j AND file_name = :n"
        ),
        {"j": job_id, "n": name},
    )


def file_preserved(engine: sa.Engine, job_id: int | None, file_name: str) -> bool:
    """Whether preservation has verified its copy of the job's file.

    The ARC-repository clean-up (indexing.cleanup) asks before it deletes an original; indexing
    sits below preservation in the layering, so the indexing_merge DAG and ``harvestflow index
    clean`` hand it this function."""
    if job_id is None:
        return False
    with engine.connect() as conn:
        status = conn.execute(
            sa.text("SELECT status FROM preservation_files WHERE job_id = :j AND file_name = :f"),
            {"j": job_id, "f": file_name},
        ).scalar()
    return status == "verified"


def all_verified(conn: sa.Connection, job_id: int) -> bool:
    counts = conn.execute(
        sa.text(
            "SELECT count(*), count(*) FILTER (WHERE status = 'verified')"
            " FROM preservation_files WHERE job_id = :j"
        ),
        {"j": job_id},
    ).one()
    return bool(counts[0]) and counts[0] == counts[1]


def manual_queue(conn: sa.Connection) -> list[dict[str, Any]]:
    """Packages waiting for a person, oldest first, with the reason."""
    rows = conn.execute(
        sa.text(
            "SELECT p.job_id, p.harvest_id, p.ark, p.error,"
            " p.finished_at AS since, p.bag_path,"
            " (SELECT string_agg(f.file_name || ': ' || f.error, '; ' ORDER BY f.file_name)"
            "    FROM preservation_files f WHERE f.job_id = p.job_id AND f.status = 'manual')"
            "   AS files"
            " FROM preservation_packages p"
            " WHERE p.status = 'manual' ORDER BY p.finished_at, p.job_id"
        )
    ).mappings()
    return with_definition_names(conn, [dict(r) for r in rows])


def with_definition_names(conn: sa.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with ``harvest_name`` after ``harvest_id`` (None when the definition is gone),
    asked of the harvest stage, which owns the definitions."""
    names = definition_names(conn, [r["harvest_id"] for r in rows if r["harvest_id"] is not None])
    named = []
    for row in rows:
        out: dict[str, Any] = {}
        for key, value in row.items():
            out[key] = value
            if key == "harvest_id":
                out["harvest_name"] = names.get(value) if value is not None else None
        named.append(out)
    return named


def preserved_key(conn: sa.Connection, file_name: str) -> str | None:
    """The S3 key of the verified preserved copy of ``file_name`` (for replay), if any."""
    return conn.execute(
        sa.text(
            "SELECT s3_key FROM preservation_files WHERE file_name = :n AND status = 'verified'"
            " AND s3_key IS NOT NULL ORDER BY verified_at DESC NULLS LAST LIMIT 1"
        ),
        {"n": file_name},
    ).scalar()


def files_with_ark(conn: sa.Connection) -> list[Any]:
    """(file_name, ark, s3_key, status) of every preserved file that has an ARK, by name."""
    return list(
        conn.execute(
            sa.text(
                "SELECT file_name, ark, s3_key, status FROM preservation_files"
                " WHERE ark IS NOT NULL ORDER BY file_name"
            )
        ).all()
    )


# --- copies and fixity audits ---------------------------------------------------------------------
# Each preserved file has one row per copy (primary = [s3], replica = [s3_replica]). A file's
# last verification is the oldest of its copies' (NULL while a configured copy has no row: a
# replica never made yet comes first in the audit, which makes it from the other copy).

COPY_STATUSES = ("uploaded", "verified", "bad")


@dataclass(frozen=True)
class AuditFile:
    """A preserved file as the fixity audit reads it."""

    job_id: int
    file_name: str
    role: str
    size: int
    sha256: str
    s3_key: str
    last_verified: Any  # datetime | None


def set_copy(
    conn: sa.Connection,
    job_id: int,
    file_name: str,
    copy: str,
    status: str,
    *,
    s3_checksum: str | None = None,
    audited: bool = False,
    repaired: bool = False,
    error: str | None = None,
) -> None:
    """Record one copy's state (UPSERT: a retried task may repeat it).

    ``verified`` stamps ``verified_at``; ``audited`` stamps ``audited_at`` (a fixity audit read
    it); ``repaired`` counts a repair; a checksum given replaces the stored one."""
    if status not in COPY_STATUSES:
        raise ValueError(f"unknown copy status {status!r}")
    conn.execute(
        sa.text(
            "INSERT INTO preservation_copies AS c (job_id, file_name, copy, status, s3_checksum,"
            " uploaded_at, verified_at, audited_at, repairs, error)"
            " VALUES (:j, :n, :c, :s, :k, now(),"
            "  CASE WHEN :s = 'verified' THEN now() END, CASE WHEN :a THEN now() END,"
            "  CASE WHEN :r THEN 1 ELSE 0 END, :e)"
            " ON CONFLICT (job_id, file_name, copy) DO UPDATE SET status = EXCLUDED.status,"
            " s3_checksum = coalesce(EXCLUDED.s3_checksum, c.s3_checksum),"
            " uploaded_at = coalesce(c.uploaded_at, EXCLUDED.uploaded_at),"
            " verified_at = coalesce(EXCLUDED.verified_at, c.verified_at),"
            " audited_at = coalesce(EXCLUDED.audited_at, c.audited_at),"
            " repairs = c.repairs + EXCLUDED.repairs, error = EXCLUDED.error"
        ),
        {
            "j": job_id,
            "n": file_name,
            "c": copy,
            "s": status,
            "k": s3_checksum,
            "a": audited,
            "r": repaired,
            "e": error,
        },
    )


def copies_of(conn: sa.Connection, job_id: int) -> dict[tuple[str, str], dict[str, Any]]:
    """{(file_name, copy): row} of a package's copies."""
    rows = conn.execute(
        sa.text("SELECT * FROM preservation_copies WHERE job_id = :j"), {"j": job_id}
    ).mappings()
    return {(r["file_name"], r["copy"]): dict(r) for r in rows}


def _last_verified_sql() -> str:
    """Preserved files with their last verification over the copies ``:copies`` (:ncopies)."""
    return (
        "SELECT f.job_id, f.file_name, f.role, f.size, f.sha256, f.s3_key,"
        " (SELECT CASE WHEN count(*) < :ncopies THEN NULL ELSE min(c.verified_at) END"
        "    FROM preservation_copies c WHERE c.job_id = f.job_id"
        "    AND c.file_name = f.file_name AND c.copy = ANY(:copies)) AS last_verified"
        " FROM preservation_files f JOIN preservation_packages p ON p.job_id = f.job_id"
        " WHERE p.status = 'preserved' AND f.status = 'verified'"
    )


def files_due_for_audit(
    conn: sa.Connection,
    copies: list[str],
    *,
    now: Any,
    share: float,
    period_days: int,
) -> list[AuditFile]:
    """The files a daily fixity audit reads: the oldest-verified first, as many as the larger of
    ``share`` of all preserved files and those last verified ``period_days - 1`` days ago or
    earlier (or never in some copy), so that every file is read within the period when the
    audit runs daily."""
    rows = conn.execute(
        sa.text(
            f"WITH f AS ({_last_verified_sql()}),"
            " n AS (SELECT count(*) AS total, count(*) FILTER (WHERE last_verified IS NULL"
            "   OR last_verified <= CAST(:now AS timestamptz) - make_interval(days => :due))"
            "   AS due FROM f)"
            " SELECT f.* FROM f ORDER BY f.last_verified NULLS FIRST, f.job_id,"
            ' f.file_name COLLATE "C"'
            " LIMIT (SELECT greatest(ceil(:share * total), due) FROM n)"
        ),
        {
            "copies": list(copies),
            "ncopies": len(copies),
            "now": now,
            "share": float(share),
            "due": max(0, int(period_days) - 1),
        },
    ).all()
    return [AuditFile(*r) for r in rows]


def file_failed_audit(conn: sa.Connection, job_id: int, file_name: str, reason: str) -> None:
    """A file bad in every copy: the file and its package go to the manual queue."""
    conn.execute(
        sa.text(
            "UPDATE preservation_files SET status = 'manual', error = :e"
            " WHERE job_id = :j AND file_name = :n"
        ),
        {"j": job_id, "n": file_name, "e": reason},
    )
    set_package_status(conn, job_id, "manual", reason)
    add_event(conn, job_id, "fixity_failed", reason, file_name)


def audit_started(conn: sa.Connection, *, share: float, period_days: int, copies: list[str]) -> int:
    return int(
        conn.execute(
            sa.text(
                "INSERT INTO preservation_audits (share, period_days, copies)"
                " VALUES (:s, :p, :c) RETURNING audit_id"
            ),
            {"s": share, "p": period_days, "c": ",".join(copies)},
        ).scalar_one()
    )


def audit_progress(conn: sa.Connection, audit_id: int, counts: dict[str, int]) -> None:
    """The run's counts so far (written after each file: a killed run still shows them)."""
    conn.execute(
        sa.text(
            "UPDATE preservation_audits SET files = :files, bytes = :bytes, good = :good,"
            " repaired = :repaired, failed = :failed WHERE audit_id = :i"
        ),
        {"i": audit_id, **{k: counts.get(k, 0) for k in FIXITY_COUNTS}},
    )


def audit_finished(conn: sa.Connection, audit_id: int, detail: str) -> None:
    conn.execute(
        sa.text(
            "UPDATE preservation_audits SET finished_at = now(), detail = CAST(:d AS jsonb)"
            " WHERE audit_id = :i"
        ),
        {"i": audit_id, "d": detail},
    )


FIXITY_COUNTS = ("files", "bytes", "good", "repaired", "failed")


def audit_overview(
    conn: sa.Connection, copies: list[str], period_days: int, job_ids: list[int] | None = None
) -> dict[str, Any]:
    """The fixity audits' progress for people (the curator pages, ``preservation status``):
    preserved files, how many were verified in every copy within the period, the oldest last
    verification, copies found bad and not repaired, the last runs, and per package (of
    ``job_ids``) its last verification (the oldest of its files')."""
    params = {"copies": list(copies), "ncopies": len(copies), "days": int(period_days)}
    totals = (
        conn.execute(
            sa.text(
                f"WITH f AS ({_last_verified_sql()})"
                " SELECT count(*) AS files,"
                " count(*) FILTER (WHERE last_verified >= now() - make_interval(days => :days))"
                "   AS verified_in_period,"
                " count(*) FILTER (WHERE last_verified IS NULL) AS never_verified,"
                " min(last_verified) AS oldest_verified,"
                " (SELECT count(*) FROM preservation_copies WHERE status = 'bad') AS bad_copies"
                " FROM f"
            ),
            params,
        )
        .mappings()
        .one()
    )
    runs = conn.execute(
        sa.text(
            "SELECT audit_id, started_at, finished_at, share, copies, files, bytes, good,"
            " repaired, failed FROM preservation_audits ORDER BY audit_id DESC LIMIT 10"
        )
    ).mappings()
    packages: dict[int, Any] = {}
    if job_ids:
        packages = dict(
            conn.execute(
                sa.text(
                    f"WITH f AS ({_last_verified_sql()} AND f.job_id = ANY(:jobs))"
                    " SELECT job_id, CASE WHEN bool_or(last_verified IS NULL) THEN NULL"
                    " ELSE min(last_verified) END FROM f GROUP BY job_id"
                ),
                {**params, "jobs": list(job_ids)},
            ).all()
        )
    return {
        **dict(totals),
        "period_days": int(period_days),
        "copies": list(copies),
        "runs": [dict(r) for r in runs],
        "packages": packages,
    }
