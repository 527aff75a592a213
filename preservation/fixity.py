"""Fixity audits: re-read preserved files in every copy, repair a bad copy from a good one.

Why (OAIS practice, SPAR's): silent corruption of a stored object is seen only by reading it.
Each daily run reads the oldest-verified files first — at least ``audit_share_per_day`` of them,
and every file whose last verification is ``audit_period_days - 1`` days old or older — so every
file is read within the period (``records.files_due_for_audit``). A copy whose SHA-256 or size
differs from the manifest (or that is missing) is repaired from a copy that matches: downloaded
to the temporary zone with its SHA-256 checked, uploaded again with the manifest's SHA-256 (the
store refuses other bytes), re-read. A file bad in every copy cannot be repaired here: it and
its package go to the manual queue with the copies and the expected checksum, and the run's
result says ``failed`` so that the DAG run is red. Transient store errors propagate (the run is
retried; what was audited so far is recorded file by file).
"""

from __future__ import annotations

import json
import logging
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings
from preservation import records
from preservation.config import PreservationConfig
from preservation.copies import Copy, copy_names, open_copies
from preservation.errors import SeriousError
from preservation.records import AuditFile

log = logging.getLogger(__name__)
_LOCK = (0x50524553, 0x46495859)  # "PRES", "FIXY": one audit at a time


@dataclass
class FileAudit:
    """What the audit found for one file: ``good``, ``repaired`` or ``failed``."""

    outcome: str
    bytes_read: int = 0
    notes: list[str] = field(default_factory=list)


def audit(
    settings: Settings | None = None, *, share: float | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """One audit run over the files due; returns its summary.

    ``status`` is ``ok`` (every file read was good or repaired), ``failed`` (a file is bad in
    every copy: see ``failed``) or ``busy`` (another audit is running). ``share`` overrides
    ``[preservation] audit_share_per_day`` for this run.
    """
    settings = settings or get_settings()
    cfg = PreservationConfig.from_settings(settings)
    share = cfg.audit_share_per_day if share is None else float(share)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"audit share must be within 0..1, not {share}")
    engine = get_engine(settings.harvest_db_url)
    with engine.connect() as lock:
        got = lock.execute(
            sa.text("SELECT pg_try_advisory_lock(:a, :b)"), dict(zip("ab", _LOCK, strict=True))
        ).scalar()
        lock.commit()
        if not got:
            log.warning("another fixity audit is running: nothing done")
            return {"status": "busy"}
        try:
            return _audit_locked(settings, cfg, engine, share, now or datetime.now(UTC))
        finally:
            lock.execute(
                sa.text("SELECT pg_advisory_unlock(:a, :b)"), dict(zip("ab", _LOCK, strict=True))
            )
            lock.commit()


def _audit_locked(
    settings: Settings, cfg: PreservationConfig, engine: sa.Engine, share: float, now: datetime
) -> dict[str, Any]:
    copies = open_copies(settings, cfg)
    names = [c.name for c in copies]
    with engine.begin() as conn:
        due = records.files_due_for_audit(
            conn, names, now=now, share=share, period_days=cfg.audit_period_days
        )
        audit_id = records.audit_started(
            conn, share=share, period_days=cfg.audit_period_days, copies=names
        )
    log.info(
        "fixity audit %d: %d file(s) due (share %.4g, period %d days), copies %s",
        audit_id,
        len(due),
        share,
        cfg.audit_period_days,
        ", ".join(c.where for c in copies),
    )
    counts = dict.fromkeys(records.FIXITY_COUNTS, 0)
    repaired: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    workdir = cfg.staging_root(settings).parent / "audit"
    for f in due:
        result = audit_file(engine, copies, f, workdir)
        counts["files"] += 1
        counts["bytes"] += result.bytes_read
        counts[result.outcome] += 1
        entry = {"job_id": f.job_id, "file": f.file_name, "key": f.s3_key, "notes": result.notes}
        if result.outcome == "repaired":
            repaired.append(entry)
        elif result.outcome == "failed":
            failed.append(entry)
        with engine.begin() as conn:
            records.audit_progress(conn, audit_id, counts)
    summary: dict[str, Any] = {
        "audit_id": audit_id,
        "status": "failed" if failed else "ok",
        "share": share,
        "period_days": cfg.audit_period_days,
        "copies": names,
        **counts,
        "repaired_files": repaired,
        "failed_files": failed,
    }
    with engine.begin() as conn:
        records.audit_finished(
            conn, audit_id, json.dumps({"repaired": repaired, "failed": failed}, default=str)
        )
    for line in summary_lines(summary):
        (log.error if failed else log.info)("%s", line)
    return summary


def audit_file(engine: sa.Engine, copies: list[Copy], f: AuditFile, workdir: Path) -> FileAudit:
    """Read the file in every copy; repair the bad copies from a good one, or fail it."""
    result = FileAudit("good")
    found: dict[str, str] = {}  # copy name -> what is wrong with it
    good: list[Copy] = []
    for copy in copies:
        if copy.store.head(f.s3_key) is None:
            found[copy.name] = "missing"
            continue
        sha, size = copy.store.read_sha256(f.s3_key)
        result.bytes_read += size
        if (sha, size) == (f.sha256, f.size):
            good.append(copy)
        else:
            found[copy.name] = f"sha256 {sha} ({size} bytes)"
    with engine.begin() as conn:
        for copy in good:
            records.set_copy(conn, f.job_id, f.file_name, copy.name, "verified", audited=True)
        for name, what in found.items():
            records.set_copy(conn, f.job_id, f.file_name, name, "bad", audited=True, error=what)
    if not found:
        return result
    expected = f"expected sha256 {f.sha256} ({f.size} bytes)"
    if not good:
        where = "; ".join(f"{c.where}: {found[c.name]}" for c in copies)
        reason = f"fixity: {f.s3_key} is bad in every copy, {expected}; {where}"
        return _fail(engine, f, reason, result)
    source = good[0]
    for copy in copies:
        if copy.name not in found:
            continue
        was = found[copy.name]
        log.warning(
            "fixity: %s bad in the %s copy (%s), %s: repairing from the %s copy",
            f.s3_key,
            copy.name,
            was,
            expected,
            source.name,
        )
        try:
            checksum = repair_copy(source, copy, f, workdir)
        except SeriousError as exc:
            reason = (
                f"fixity: {f.s3_key}: the {copy.name} copy ({was}) could not be repaired from"
                f" the {source.name} copy: {exc.reason}; {expected}"
            )
            return _fail(engine, f, reason, result)
        note = f"{copy.name} copy repaired from the {source.name} copy (was {was}), {expected}"
        with engine.begin() as conn:
            records.set_copy(
                conn,
                f.job_id,
                f.file_name,
                copy.name,
                "verified",
                s3_checksum=checksum,
                audited=True,
                repaired=True,
            )
            records.add_event(conn, f.job_id, "fixity_repaired", note, f.file_name)
        log.warning("fixity: %s: %s", f.s3_key, note)
        result.notes.append(note)
    result.outcome = "repaired"
    return result


def _fail(engine: sa.Engine, f: AuditFile, reason: str, result: FileAudit) -> FileAudit:
    with engine.begin() as conn:
        records.file_failed_audit(conn, f.job_id, f.file_name, reason)
    log.error("job %s: to the manual queue: %s", f.job_id, reason)
    result.outcome = "failed"
    result.notes.append(reason)
    return result


def repair_copy(source: Copy, target: Copy, f: AuditFile, workdir: Path) -> str:
    """Copy the object from ``source`` to ``target`` through a checked local file; returns the
    target's S3 checksum after a full re-read. :class:`SeriousError` if the source no longer
    matches the manifest or the new copy does not verify."""
    stored = source.store.head(f.s3_key)
    if stored is None:
        raise SeriousError(f"{f.s3_key}: gone from the {source.name} copy during the repair")
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir, prefix="repair-") as tmp:
        local = Path(tmp) / Path(f.s3_key).name
        sha, size = source.store.download(f.s3_key, local)
        if (sha, size) != (f.sha256, f.size):
            raise SeriousError(
                f"{f.s3_key}: the {source.name} copy read sha256 {sha} ({size} bytes)"
                " while being copied"
            )
        metadata = {k: v for k, v in stored.metadata.items() if k != "sha256"}
        checksum = target.store.upload(
            local, f.s3_key, size=f.size, sha256_hex=f.sha256, metadata=metadata
        )
    target.store.verify(
        f.s3_key, size=f.size, sha256_hex=f.sha256, s3_checksum=checksum, reread=True
    )
    return checksum


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The run in a few lines for the task log and the CLI: counts, each repair, each failure."""
    if summary.get("status") == "busy":
        return ["another fixity audit is running: nothing done"]
    lines = [
        f"fixity audit {summary['audit_id']}: {summary['files']} file(s) read in"
        f" {len(summary['copies'])} copies ({', '.join(summary['copies'])}),"
        f" {summary['bytes']} bytes; good {summary['good']}, repaired {summary['repaired']},"
        f" bad in every copy {summary['failed']} (share {summary['share']:.4g},"
        f" period {summary['period_days']} days)"
    ]
    for item in summary["repaired_files"]:
        lines += [f"REPAIRED job {item['job_id']} {item['file']}: {n}" for n in item["notes"]]
    for item in summary["failed_files"]:
        lines += [f"FAILED job {item['job_id']} {item['file']}: {n}" for n in item["notes"]]
    return lines


def audit_status(
    settings: Settings | None = None,
    job_ids: list[int] | None = None,
    conn: sa.Connection | None = None,
) -> dict[str, Any]:
    """The audits' progress (``records.audit_overview``) over the configured copies, and the
    last verification of each package of ``job_ids`` (on ``conn`` when given: the curator
    pages' read-only connection)."""
    settings = settings or get_settings()
    cfg = PreservationConfig.from_settings(settings)
    names = copy_names(settings)
    if conn is not None:
        return records.audit_overview(conn, names, cfg.audit_period_days, job_ids)
    with get_engine(settings.harvest_db_url).connect() as own:
        return records.audit_overview(own, names, cfg.audit_period_days, job_ids)
