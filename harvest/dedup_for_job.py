"""The deduplication index a job is given: captures of the previous run of its definition.

Why: a selective job de-duplicates against the previous run of the same harvest definition
(NetarchiveSuite; a snapshot second step against its first step). The indexing package builds
the index (``indexing.dedup_index.build_dedup_index``); when it has nothing for those jobs, the
index is derived here from the CDX files recorded in ``index_manifest`` for the previous run's
WARCs.
No previous capture known: no index (the crawler then stores every payload).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.common import DONE
from harvestflow.atomic import atomic_write_bytes
from harvestflow.formats.cdx import parse_cdx11

log = logging.getLogger(__name__)

DEDUP_FILE = "dedup-index.txt"


def previous_jobs(conn: Connection, job: Any) -> tuple[int, list[int]]:
    """(definition, job ids) of the previous run of the job's definition (for a snapshot second
    step: the jobs of its first step)."""
    if job.snapshot:
        prev = conn.execute(
            sa.text("SELECT previoushd FROM fullharvests WHERE harvest_id = :h"),
            {"h": job.harvest_id},
        ).scalar()
        if prev is None:
            return job.harvest_id, []
        rows = conn.execute(
            sa.text("SELECT job_id FROM jobs WHERE harvest_id = :h AND status = :d ORDER BY 1"),
            {"h": prev, "d": DONE},
        )
        return int(prev), [int(r) for r in rows.scalars()]
    num = conn.execute(
        sa.text(
            "SELECT max(harvest_num) FROM jobs WHERE harvest_id = :h AND harvest_num < :n"
            " AND status = :d"
        ),
        {"h": job.harvest_id, "n": job.harvest_num, "d": DONE},
    ).scalar()
    if num is None:
        return job.harvest_id, []
    rows = conn.execute(
        sa.text(
            "SELECT job_id FROM jobs WHERE harvest_id = :h AND harvest_num = :n AND status = :d"
            " ORDER BY 1"
        ),
        {"h": job.harvest_id, "n": num, "d": DONE},
    )
    return job.harvest_id, [int(r) for r in rows.scalars()]


def _cdx_date_to_iso(stamp: str) -> str:
    s = (stamp + "00000000000000")[:14]
    return f"{s[0:4]}-{s[4:6]}-{s[6:8]}T{s[8:10]}:{s[10:12]}:{s[12:14]}Z"


def cdx_to_dedup_lines(cdx_path: Path) -> Iterator[str]:
    """Dedup-index lines from an 11-field CDX file (N b a m s k r M S V g).

    Revisit records and captures without a digest are left out (nothing to refer to); the
    record id, ETag and Last-Modified are not in a CDX and are written as "-".
    """
    with cdx_path.open(encoding="utf-8", errors="replace", newline="\n") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.startswith(" CDX") or not line.strip():
                continue
            rec = parse_cdx11(line)
            if rec is None:
                log.warning("%s line %d: not an 11-field CDX line, skipped", cdx_path, lineno)
                continue
            if rec.digest == "-" or rec.mime == "warc/revisit":
                continue
            digest = rec.digest if rec.digest.startswith("sha1:") else "sha1:" + rec.digest
            date = _cdx_date_to_iso(rec.timestamp)
            yield "\t".join((rec.url, digest, date, rec.filename, str(rec.offset), "-", "-", "-"))


def _from_manifest_cdx(conn: Connection, job_ids: list[int], out: Path) -> bool:
    paths = conn.execute(
        sa.text(
            "SELECT DISTINCT cdx_path FROM index_manifest WHERE job_id = ANY(CAST(:j AS bigint[]))"
            " AND cdx_path IS NOT NULL ORDER BY 1"
        ),
        {"j": job_ids},
    ).scalars()
    lines: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            log.warning("dedup: CDX file %s of a previous job is missing, skipped", path)
            continue
        lines.update(cdx_to_dedup_lines(path))
    if not lines:
        return False
    data = sorted(line.encode("utf-8") for line in lines)  # byte order
    atomic_write_bytes(out, b"".join(line + b"\n" for line in data))
    return True


def dedup_index_for_job(conn: Connection, job: Any, job_dir: Path) -> str | None:
    """Path of the dedup index written for ``job`` in its directory, or None."""
    harvest_id, prev = previous_jobs(conn, job)
    if not prev:
        return None
    out = job_dir / DEDUP_FILE
    if out.exists() and out.stat().st_size > 0:
        return str(out)
    try:
        builder = importlib.import_module("indexing.dedup_index").build_dedup_index
    except (ImportError, AttributeError):
        builder = None
    if builder is not None:
        try:
            builder(harvest_id, out, job_ids=prev)
            if out.exists() and out.stat().st_size > 0:
                log.info("job %s: dedup index of previous jobs %s", job.job_id, prev)
                return str(out)
        except Exception:
            log.exception("dedup: indexing.dedup_index.build_dedup_index failed, trying the CDX")
    if _from_manifest_cdx(conn, prev, out):
        log.info("job %s: dedup index from the CDX of previous jobs %s", job.job_id, prev)
        return str(out)
    log.info("job %s: previous jobs %s have no index yet: no dedup index", job.job_id, prev)
    out.unlink(missing_ok=True)  # an empty file written above: ours, holds nothing
    return None
