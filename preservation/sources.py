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

from harvest import jobs
from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.job_status import JobStatus
from indexing import manifest
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
    row = jobs.job_with_definition(conn, job_id)
    if row is None:
        raise LookupError(f"job {job_id} does not exist")
    return JobInfo(**row)


def _role(job_id: int, name: str) -> str:
    return "metadata" if metadata_name_re(job_id).match(name) else "data"


def job_files(conn: sa.Connection, job: JobInfo, *, allow_job_dir: bool = True) -> list[JobFile]:
    """The job's WARC files, metadata first. Raises NotReady or MissingFile."""
    rows = manifest.job_file_rows(conn, job.job_id)
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
        warcs = JobDir(job.job_dir).warcs
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
    queue, whose files are all final.

    Each stage answers for its own table: harvest for the jobs, indexing for the manifest
    (metadata WARC present, every file in the repository), preservation for its packages.
    """
    # RESUBMITTED jobs qualify once their dead crawl was salvaged and indexed: the
    # indexing chain takes only salvaged ones, and their metadata WARC must be in the manifest
    candidates = jobs.jobs_with_status(conn, (JobStatus.DONE, JobStatus.RESUBMITTED))
    ids = [int(r.job_id) for r in candidates]
    taken = {
        int(r[0])
        for r in conn.execute(
            sa.text(
                "SELECT job_id FROM preservation_packages WHERE job_id = ANY(:j)"
                " AND status IN ('preserved', 'manual')"
            ),
            {"j": ids},
        )
    }
    indexed = manifest.jobs_with_final_files(conn, ids)
    in_manifest = manifest.jobs_in_manifest(conn, ids) if include_unindexed else set()
    return [
        int(r.job_id)
        for r in candidates
        if r.job_id not in taken
        and (
            r.job_id in indexed
            or (
                include_unindexed
                and r.status == JobStatus.DONE
                and r.job_dir is not None
                and r.job_id not in in_manifest
            )
        )
    ]
