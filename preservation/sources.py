"""Where a job's files are: the indexing manifest first, the job directory as a fallback.

Why the manifest: after the indexing chain a WARC lives at its ``final_path`` in the repository
(the job directory may already be cleaned up), and the manifest tells us whether every file of
the job has got there. A job with no manifest row at all (indexed before the manifest existed, or
ingested by hand) can still be preserved from ``jobs.job_dir``/warcs, but only when asked for
explicitly: a DONE job that simply has not been indexed yet must not be picked up automatically.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from harvestflow.formats.job_status import JobStatus
from preservation.errors import ChecksumMismatch, MissingFile

WARC_SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc")  # ARC: legacy collections, deliveries
# indexing chain stages at which a file is in the repository, copied and sha1-checked
# (the chain records final_path *before* copying, so final_path alone is not enough)
FINAL_STAGES = ("transferred", "backedup", "done")


def metadata_name_re(job_id: int) -> re.Pattern[str]:
    return re.compile(rf"^{job_id}-metadata-\d+\.warc(\.gz)?$")


@dataclass(frozen=True)
class JobFile:
    name: str
    path: Path
    role: str  # 'metadata' or 'data'


@dataclass
class JobInfo:
    job_id: int
    harvest_id: int
    harvest_name: str
    harvest_num: int
    status: int
    channel: str
    snapshot: bool
    template_name: str
    startdate: datetime | None
    enddate: datetime | None
    job_dir: str | None
    files: list[JobFile] = field(default_factory=list)
    source: str = "manifest"


class NotReady(Exception):
    """The job's files have not all reached their final location yet (not an error)."""


def load_job(conn: sa.Connection, job_id: int) -> JobInfo:
    row = (
        conn.execute(
            sa.text(
                "SELECT j.job_id, j.harvest_id, h.name AS harvest_name, j.harvest_num, j.status,"
                " j.channel, j.snapshot, j.template_name, j.startdate, j.enddate, j.job_dir"
                " FROM jobs j JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
                " WHERE j.job_id = :j"
            ),
            {"j": job_id},
        )
        .mappings()
        .first()
    )
    if row is None:
        raise LookupError(f"job {job_id} does not exist")
    return JobInfo(**dict(row))


def _role(job_id: int, name: str) -> str:
    return "metadata" if metadata_name_re(job_id).match(name) else "data"


def job_files(conn: sa.Connection, job: JobInfo, *, allow_job_dir: bool = True) -> list[JobFile]:
    """The job's WARC files, metadata first. Raises NotReady or MissingFile."""
    rows = conn.execute(
        sa.text(
            "SELECT file_name, final_path, quarantined, stage, size FROM index_manifest"
            " WHERE job_id = :j ORDER BY file_name"
        ),
        {"j": job.job_id},
    ).all()
    files: list[JobFile] = []
    if rows:
        for name, final_path, quarantined, stage, size in rows:
            if quarantined:
                raise NotReady(f"job {job.job_id}: {name} is quarantined by the indexing chain")
            if not final_path or stage not in FINAL_STAGES:
                raise NotReady(f"job {job.job_id}: {name} not transferred yet (stage {stage})")
            path = Path(final_path)
            if size is not None and path.is_file() and path.stat().st_size != size:
                raise ChecksumMismatch(
                    f"job {job.job_id}: {path} has {path.stat().st_size} bytes, the indexing"
                    f" manifest says {size}",
                    file_name=name,
                )
            files.append(JobFile(name, path, _role(job.job_id, name)))
        job.source = "manifest"
    else:
        if not allow_job_dir or not job.job_dir:
            raise NotReady(f"job {job.job_id}: no file in the indexing manifest")
        warcs = Path(job.job_dir) / "warcs"
        if not warcs.is_dir():
            raise MissingFile(f"job {job.job_id}: {warcs} does not exist")
        for path in sorted(warcs.iterdir()):
            if path.is_file() and path.name.endswith(WARC_SUFFIXES):
                files.append(JobFile(path.name, path, _role(job.job_id, path.name)))
        job.source = "job_dir"
    metadata = [f for f in files if f.role == "metadata"]
    if not metadata:
        raise MissingFile(
            f"job {job.job_id}: no metadata WARC ({job.job_id}-metadata-1.warc.gz) among"
            f" {len(files)} files ({job.source})"
        )
    for f in files:
        if not f.path.is_file():
            raise MissingFile(f"job {job.job_id}: {f.path} is missing", file_name=f.name)
    return sorted(files, key=lambda f: (f.role != "metadata", f.name.encode()))


def jobs_ready(conn: sa.Connection, *, include_unindexed: bool = False) -> list[int]:
    """DONE jobs (and salvaged partial ones), not yet preserved nor waiting in the manual
    queue, whose files are all final."""
    indexed = (
        "EXISTS (SELECT 1 FROM index_manifest m WHERE m.job_id = j.job_id"
        "        AND m.file_name ~ ('^' || j.job_id || '-metadata-[0-9]+\\.warc(\\.gz)?$'))"
        " AND NOT EXISTS (SELECT 1 FROM index_manifest m WHERE m.job_id = j.job_id"
        "        AND (m.final_path IS NULL OR m.quarantined"
        "             OR m.stage NOT IN ('transferred', 'backedup', 'done')))"
    )
    if include_unindexed:
        indexed = (
            f"(({indexed}) OR (j.status = {JobStatus.DONE:d}"
            " AND j.job_dir IS NOT NULL AND NOT EXISTS"
            " (SELECT 1 FROM index_manifest m WHERE m.job_id = j.job_id)))"
        )
    # RESUBMITTED jobs qualify once their dead crawl was salvaged and indexed: the
    # indexing chain takes only salvaged ones, and their metadata WARC must be in the manifest
    sql = (
        "SELECT j.job_id FROM jobs j"
        f" WHERE j.status IN ({JobStatus.DONE:d}, {JobStatus.RESUBMITTED:d})"
        " AND NOT EXISTS (SELECT 1 FROM preservation_packages p WHERE p.job_id = j.job_id"
        "                 AND p.status IN ('preserved', 'manual'))"
        f" AND {indexed} ORDER BY j.job_id"
    )
    return [int(r[0]) for r in conn.execute(sa.text(sql))]
