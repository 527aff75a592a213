"""Stage a job as a BagIt package (RFC 8493) in the temporary zone, and record it in the DB.

Why a bag: it is the standard SIP wrapper of digital preservation; its manifests carry the
sha256 and sha512 of every file, and its bag-info names the harvest definition and the job, so
the three levels (harvest definition → job → file) can be rebuilt from storage alone. The WARCs
are hard-linked into the bag (copied if the temporary zone is on another file system): WARCs are
immutable once written, and a 2 GB job should not be copied just to be hashed. The bag is written
by :mod:`preservation.bagwriter` (parallel hashing) and checked with the ``bagit`` library; it is
built under a temporary name and renamed when complete; a bag already staged is reused, so
staging is idempotent.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bagit
import sqlalchemy as sa

import harvestflow
from harvestflow.db import get_engine
from harvestflow.formats.job_status import JobStatus
from harvestflow.settings import Settings, get_settings
from preservation import ark as arks
from preservation import records
from preservation.bagwriter import UnportableName, link_or_copy, write_bag, write_parts
from preservation.config import PreservationConfig
from preservation.errors import InvalidBag, SeriousError
from preservation.outcomes import Outcome
from preservation.sources import JobInfo, NotReady, job_files, load_job

log = logging.getLogger(__name__)

CHECKSUMS = ["sha256", "sha512"]  # manifests written by preservation.bagwriter
TAG_FILES = (
    "bagit.txt",
    "bag-info.txt",
    "manifest-sha256.txt",
    "manifest-sha512.txt",
    "tagmanifest-sha256.txt",
    "tagmanifest-sha512.txt",
)


def bag_dir_for(cfg: PreservationConfig, settings: Settings, job: JobInfo) -> Path:
    return cfg.staging_root(settings) / f"hd-{job.harvest_id}" / f"job-{job.job_id}"


def s3_prefix_for(cfg: PreservationConfig, job: JobInfo) -> str:
    """Object keys keep the three levels: <prefix>/hd-<harvest>/job-<job>/data/<file>."""
    return f"{cfg.key_prefix.strip('/')}/hd-{job.harvest_id}/job-{job.job_id}/"


def _iso(value: datetime | None) -> str:
    return value.astimezone(UTC).isoformat(timespec="seconds") if value else ""


def bag_info_for(job: JobInfo, package_ark: str, cfg: PreservationConfig) -> dict[str, str]:
    meta = next(f.name for f in job.files if f.role == "metadata")
    return {
        "Source-Organization": cfg.organisation,
        "External-Identifier": package_ark,
        "Bag-Group-Identifier": f"harvest-definition-{job.harvest_id}",
        "Internal-Sender-Identifier": f"job-{job.job_id}",
        "Internal-Sender-Description": (
            f"Harvest definition {job.harvest_id} ({job.harvest_name}), run {job.harvest_num},"
            f" job {job.job_id}, channel {job.channel}"
            f"{', snapshot' if job.snapshot else ''}, template {job.template_name}"
        ),
        "Harvest-Definition-Id": str(job.harvest_id),
        "Harvest-Definition-Name": job.harvest_name,
        "Harvest-Number": str(job.harvest_num),
        "Job-Id": str(job.job_id),
        "Job-Start-Date": _iso(job.startdate),
        "Job-End-Date": _iso(job.enddate),
        "Harvest-Status": (
            "partial: the crawl's worker died; its output was salvaged and the job resubmitted"
            if job.status == JobStatus.RESUBMITTED
            else "complete"
        ),
        "Metadata-File": meta,
        "Payload-Files": str(len(job.files)),
        "Harvest-Software": f"harvestflow {getattr(harvestflow, '__version__', '0.1.0')}",
        "Bag-Software-Agent": "harvestflow preservation.bagwriter (BagIt 1.0, RFC 8493)",
        "Checksum-Algorithms": " ".join(CHECKSUMS),
        "Bagging-Date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


def parts_file_for(final: Path) -> Path:
    return final.parent / f"{final.name}.parts.json"


def _build_bag(
    job: JobInfo, final: Path, info: dict[str, str], cfg: PreservationConfig
) -> bagit.Bag:
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{uuid.uuid4().hex[:8]}"
    (tmp / "data").mkdir(parents=True)
    try:
        payload = {}
        for f in job.files:
            link_or_copy(f.path, tmp / "data" / f.name)
            payload[f.name] = tmp / "data" / f.name
        try:
            digests = write_bag(
                tmp,
                payload,
                info,
                part_size=cfg.part_size,
                threads=cfg.staging_threads,
                multipart_threshold=cfg.multipart_threshold,
            )
        except UnportableName as exc:
            raise InvalidBag(f"job {job.job_id}: {exc}") from exc
        # a whole bag directory (its tag files were written by harvestflow.atomic): one rename
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    write_parts(parts_file_for(final), digests)
    return open_bag(final)


def open_bag(path: Path, *, fast: bool = True) -> bagit.Bag:
    """Open and validate a staged bag (fast = structure + Payload-Oxum, no re-hash)."""
    try:
        bag = bagit.Bag(str(path))
        bag.validate(fast=fast)
    except (bagit.BagError, bagit.BagValidationError) as exc:
        raise InvalidBag(f"{path}: invalid bag: {exc}") from exc
    return bag


def _tag_digests(path: Path) -> tuple[int, str, str]:
    data = path.read_bytes()
    return len(data), hashlib.sha256(data).hexdigest(), hashlib.sha512(data).hexdigest()


def stage_package(
    job_id: int, settings: Settings | None = None, *, allow_job_dir: bool = True
) -> dict[str, Any]:
    """Build (or reuse) the job's bag and record package, files and ARKs. Idempotent.

    Returns ``{"job_id", "status", "bag_path", "ark", "files", "bytes"}``; status is ``staged``
    (ready to ingest), ``preserved`` or ``manual`` (nothing done), or ``not_ready`` (its files are
    not all in the repository yet). A missing file or an unusable bag sends the job to the manual
    queue.
    """
    settings = settings or get_settings()
    cfg = PreservationConfig.from_settings(settings)
    engine = get_engine(settings.harvest_db_url)
    with engine.begin() as conn:
        job = load_job(conn, job_id)
        package = records.get_package(conn, job_id)
        if package and package["status"] in ("preserved", "manual"):
            return {
                "job_id": job_id,
                "status": Outcome(package["status"]),
                "bag_path": package["bag_path"],
                "ark": package["ark"],
                "error": package["error"],
            }
        package_ark = arks.get_or_mint(conn, "package", str(job_id), cfg.naan, cfg.shoulder)
    final = bag_dir_for(cfg, settings, job)
    try:
        with engine.connect() as conn:
            job.files = job_files(conn, job, allow_job_dir=allow_job_dir)
        if final.exists():
            log.info("job %s: reusing the bag staged in %s", job_id, final)
            bag = open_bag(final)
        else:
            log.info("job %s: staging %d files into %s", job_id, len(job.files), final)
            bag = _build_bag(job, final, bag_info_for(job, package_ark, cfg), cfg)
        return _record(engine, cfg, job, final, bag, package_ark)
    except NotReady as exc:
        log.info("%s", exc)
        return {"job_id": job_id, "status": Outcome.NOT_READY, "reason": str(exc)}
    except SeriousError as exc:
        _to_manual_unstaged(engine, job, package_ark, exc, final)
        return {
            "job_id": job_id,
            "status": Outcome.MANUAL,
            "error": exc.reason,
            "ark": package_ark,
        }


def _upsert_package(
    conn: sa.Connection, job: JobInfo, ark: str, bag_path: str, s3_prefix: str
) -> None:
    """The job's package row, as staged so far (bag path, S3 prefix: "" while none)."""
    records.upsert_package(
        conn,
        job_id=job.job_id,
        harvest_id=job.harvest_id,
        ark=ark,
        bag_path=bag_path,
        s3_prefix=s3_prefix,
    )


def _to_manual_unstaged(
    engine: sa.Engine, job: JobInfo, package_ark: str, exc: SeriousError, final: Path
) -> None:
    log.error("job %s: to the manual queue: %s", job.job_id, exc.reason)
    with engine.begin() as conn:
        _upsert_package(conn, job, package_ark, str(final) if final.exists() else "", "")
        records.set_package_status(conn, job.job_id, "manual", f"{exc.kind}: {exc.reason}")
        records.add_event(conn, job.job_id, "manual", f"{exc.kind}: {exc.reason}", exc.file_name)


def _record(
    engine: sa.Engine,
    cfg: PreservationConfig,
    job: JobInfo,
    final: Path,
    bag: bagit.Bag,
    package_ark: str,
) -> dict[str, Any]:
    prefix = s3_prefix_for(cfg, job)
    payload = {Path(p).name: h for p, h in bag.payload_entries().items()}
    missing = sorted({f.name for f in job.files} ^ set(payload))
    if missing:
        raise InvalidBag(f"{final}: bag and job files differ: {', '.join(missing)}")
    total = 0
    with engine.begin() as conn:
        _upsert_package(conn, job, package_ark, str(final), prefix)
        for f in job.files:
            size = (final / "data" / f.name).stat().st_size
            total += size
            file_ark = arks.get_or_mint(conn, "file", f.name, cfg.naan, cfg.shoulder)
            records.upsert_file(
                conn,
                job_id=job.job_id,
                file_name=f.name,
                role=f.role,
                size=size,
                sha256=payload[f.name]["sha256"],
                sha512=payload[f.name]["sha512"],
                ark=file_ark,
                s3_key=f"{prefix}data/{f.name}",
            )
        for tag in TAG_FILES:
            size, h256, h512 = _tag_digests(final / tag)
            records.upsert_file(
                conn,
                job_id=job.job_id,
                file_name=tag,
                role="manifest",
                size=size,
                sha256=h256,
                sha512=h512,
                ark=None,
                s3_key=f"{prefix}{tag}",
            )
        records.add_event(
            conn,
            job.job_id,
            "staged",
            f"{len(job.files)} files, {total} bytes, from {job.source}, bag {final}",
        )
    return {
        "job_id": job.job_id,
        "status": Outcome.STAGED,
        "bag_path": str(final),
        "ark": package_ark,
        "files": len(job.files),
        "bytes": total,
        "source": job.source,
    }
