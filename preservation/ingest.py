"""Ingest a staged job into object storage: metadata WARC, then data WARCs, then the tag files.

Why this order and these checks (SPAR's rules): the metadata WARC is what lets the three levels
harvest definition → job → file be rebuilt, so it goes first and nothing else is sent until it is
stored *and verified*; then the data WARCs, one by one; the bag's tag files last, so a package
in storage is complete exactly when its tag manifest is there. A file is ``verified`` only after
HEAD (size, S3 SHA-256 checksum, our sha256 metadata) and, for the configured sample, a full
re-read, in every copy (``[s3]`` and, when enabled, the ``[s3_replica]`` target at another
site: :mod:`preservation.copies`); a package is ``preserved`` only when all its files are. Data WARCs are uploaded one at a
time, in order; the verification of one (HEAD + re-read) runs in the background while the next
is uploaded, and the tag files wait until every data file is verified. Re-running is safe: verified
files are skipped, an object already stored with the right checksum is adopted instead of
written again, ARKs are looked up before being minted, and a per-job advisory lock keeps two
workers off the same job.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from harvestflow.db import get_engine
from harvestflow.progress import Progress
from harvestflow.settings import Settings, get_settings
from preservation import records
from preservation.bagwriter import read_parts
from preservation.config import PreservationConfig
from preservation.copies import PRIMARY, Copy, open_copies
from preservation.errors import SeriousError, StorageConflict, TransientError
from preservation.outcomes import Outcome, outcome_of
from preservation.records import FileRow
from preservation.sources import NotReady, job_files, jobs_ready, load_job
from preservation.staging import open_bag, parts_file_for, stage_package
from preservation.store_retry import with_backoff

log = logging.getLogger(__name__)
_LOCK_NS = 0x50524553  # "PRES"


def sampled_for_reread(sha256_hex: str, rate: float) -> bool:
    """Deterministic sample (by checksum), so that a re-run re-reads the same files."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    return int(sha256_hex[:8], 16) / 0x1_0000_0000 < rate


def ingest_job(
    job_id: int, settings: Settings | None = None, *, allow_job_dir: bool = True
) -> dict[str, Any]:
    """Stage (if needed) and ingest one job; idempotent.

    Returns a summary dict with ``status``: ``preserved``, ``manual`` (serious error, see
    ``error``), ``not_ready`` or ``busy`` (another worker holds the job). Raises
    :class:`TransientError` when the store stays unreachable through all retries: the package
    stays ``ingesting`` and a later run resumes where this one stopped.
    """
    settings = settings or get_settings()
    engine = get_engine(settings.harvest_db_url)
    with engine.connect() as lock:
        got = lock.execute(
            sa.text("SELECT pg_try_advisory_lock(:ns, :j)"), {"ns": _LOCK_NS, "j": job_id % 2**31}
        ).scalar()
        lock.commit()
        if not got:
            log.warning("job %s: another worker is ingesting it, skipped", job_id)
            return {"job_id": job_id, "status": Outcome.BUSY}
        try:
            return _ingest_locked(job_id, settings, engine, allow_job_dir)
        finally:
            lock.execute(
                sa.text("SELECT pg_advisory_unlock(:ns, :j)"), {"ns": _LOCK_NS, "j": job_id % 2**31}
            )
            lock.commit()


def _ingest_locked(
    job_id: int, settings: Settings, engine: sa.Engine, allow_job_dir: bool
) -> dict[str, Any]:
    cfg = PreservationConfig.from_settings(settings)
    with engine.connect() as conn:
        package = records.get_package(conn, job_id)
    if package and package["status"] in ("preserved", "manual"):
        log.info("job %s: package already %s, nothing to do", job_id, package["status"])
        return {
            "job_id": job_id,
            "status": Outcome(package["status"]),
            "ark": package["ark"],
            "error": package["error"],
            "uploaded": 0,
            "adopted": 0,
        }
    staged = stage_package(job_id, settings, allow_job_dir=allow_job_dir)
    if outcome_of(staged) is not Outcome.STAGED:
        return staged
    bag_path = Path(staged["bag_path"])
    started = time.monotonic()
    summary: dict[str, Any] = {
        "job_id": job_id,
        "ark": staged["ark"],
        "uploaded": 0,
        "adopted": 0,
        "already_verified": 0,
        "reread": 0,
        "bytes": 0,
    }
    try:
        open_bag(bag_path)
    except SeriousError as exc:
        return _to_manual(engine, job_id, exc, summary)
    with engine.begin() as conn:
        records.set_package_status(conn, job_id, "ingesting")
        files = records.files_of(conn, job_id)
        package = records.get_package(conn, job_id)
    assert package is not None

    def on_retry(what: str, attempt: int, exc: BaseException) -> None:
        with engine.begin() as conn:
            records.add_event(conn, job_id, "retry", f"{what}: attempt {attempt}: {exc}")

    copies = open_copies(settings, cfg, on_retry)
    for copy in copies:
        copy.store.ensure_bucket()
        aborted = copy.store.abort_stale_uploads(package["s3_prefix"])
        if aborted:
            log.info(
                "job %s: aborted %d unfinished multipart uploads of an earlier attempt (%s copy)",
                job_id,
                aborted,
                copy.name,
            )
    todo = [f for f in files if f.status != "verified"]
    staged_parts = {
        name: [str(p) for p in doc.get("parts", [])]  # type: ignore[attr-defined]
        for name, doc in read_parts(parts_file_for(bag_path)).items()
        if doc.get("part_size") == cfg.part_size
    }
    summary["already_verified"] = len(files) - len(todo)
    progress = Progress(
        f"preservation ingest job {job_id}",
        total=sum(f.size for f in todo) * len(copies),
        unit="bytes",
        interval_s=cfg.progress_interval_s,
        logger=log,
    )
    verifier = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verify")
    pending: deque[tuple[FileRow, Future[None]]] = deque()
    current: FileRow | None = None

    def settle(block: bool) -> None:
        """Surface the outcome of background verifications (in order)."""
        nonlocal current
        while pending and (block or pending[0][1].done()):
            current, fut = pending.popleft()
            fut.result()

    try:
        with progress:
            for f in todo:
                settle(block=f.role == "manifest")  # tag files only after every data file
                current = f
                t0 = time.monotonic()
                checksums = _store_file(
                    engine, copies, cfg, package, bag_path, f, summary, progress, staged_parts
                )
                if f.role == "data":
                    # the next data file goes up while this one is re-read
                    pending.append(
                        (
                            f,
                            verifier.submit(
                                _verify_file, engine, copies, cfg, f, checksums, t0, summary
                            ),
                        )
                    )
                else:  # the metadata WARC must be accepted before anything else is sent
                    _verify_file(engine, copies, cfg, f, checksums, t0, summary)
            settle(block=True)
    except SeriousError as exc:
        if exc.file_name is None and current is not None:
            exc.file_name = current.file_name
        _drain(pending)
        return _to_manual(engine, job_id, exc, summary)
    except TransientError as exc:
        _drain(pending)
        name = current.file_name if current is not None else None
        with engine.begin() as conn:
            if name:
                records.file_error(conn, job_id, name, "pending", str(exc))
            records.add_event(conn, job_id, "transient", str(exc), name)
        log.error("job %s: object store unavailable, ingest left to resume: %s", job_id, exc)
        raise
    finally:
        verifier.shutdown(wait=True, cancel_futures=True)
    with engine.begin() as conn:
        if not records.all_verified(conn, job_id):
            raise RuntimeError(f"job {job_id}: files left unverified after the ingest loop")
        records.set_package_status(conn, job_id, "preserved")
        records.add_event(
            conn,
            job_id,
            "preserved",
            f"{len(files)} files in {len(copies)} copies ({', '.join(c.name for c in copies)});"
            f" {summary['uploaded']} uploaded, {summary['adopted']} already stored",
        )
    summary["seconds"] = round(time.monotonic() - started, 3)
    summary["status"] = Outcome.PRESERVED
    summary["files"] = len(files)
    log.info("job %s: preserved as %s (%s)", job_id, staged["ark"], summary)
    _cleanup(engine, settings, cfg, job_id, bag_path, files, allow_job_dir)
    return summary


def _drain(pending: deque[tuple[FileRow, Future[None]]]) -> None:
    """Wait for background verifications after a failure; their own errors are only logged."""
    while pending:
        f, fut = pending.popleft()
        try:
            fut.result()
        except Exception as exc:
            log.warning("%s: verification did not complete: %s", f.file_name, exc)


def _store_file(
    engine: sa.Engine,
    copies: list[Copy],
    cfg: PreservationConfig,
    package: dict[str, Any],
    bag_path: Path,
    f: FileRow,
    summary: dict[str, Any],
    progress: Progress,
    staged_parts: dict[str, list[str]],
) -> dict[str, str | None]:
    """Store one file in every copy; returns {copy name: S3 checksum}."""
    local = bag_path / "data" / f.file_name if f.role != "manifest" else bag_path / f.file_name
    checksums: dict[str, str | None] = {}
    for copy in copies:
        checksum = _store_copy(
            engine, copy, cfg, package, local, f, summary, progress, staged_parts
        )
        checksums[copy.name] = checksum
        with engine.begin() as conn:
            if copy.name == PRIMARY:
                records.file_uploaded(conn, f.job_id, f.file_name, checksum)
            records.set_copy(
                conn, f.job_id, f.file_name, copy.name, "uploaded", s3_checksum=checksum
            )
    return checksums


def _count(summary: dict[str, Any], copy: Copy, key: str, n: int = 1) -> None:
    """The primary copy's counts keep their names; another copy's are prefixed with its name."""
    name = key if copy.name == PRIMARY else f"{copy.name}_{key}"
    summary[name] = summary.get(name, 0) + n


def _store_copy(
    engine: sa.Engine,
    copy: Copy,
    cfg: PreservationConfig,
    package: dict[str, Any],
    local: Path,
    f: FileRow,
    summary: dict[str, Any],
    progress: Progress,
    staged_parts: dict[str, list[str]],
) -> str | None:
    """Upload one file to one copy (or adopt the identical object already stored there)."""
    store = copy.store
    existing = store.head(f.s3_key)
    if existing is not None:
        if existing.size != f.size or existing.metadata.get("sha256") != f.sha256:
            raise StorageConflict(
                f"{f.s3_key} ({copy.name} copy): an object is already stored there with other"
                f" content (size {existing.size}, sha256 {existing.metadata.get('sha256')});"
                " not overwritten",
                file_name=f.file_name,
            )
        log.info(
            "%s (%s copy): already stored with the right checksum, not written again",
            f.s3_key,
            copy.name,
        )
        _count(summary, copy, "adopted")
        progress.advance(f.size)
        return existing.s3_checksum
    with engine.begin() as conn:
        records.file_attempt(conn, f.job_id, f.file_name)
    metadata = {
        "ark": f.ark or str(package["ark"]),
        "harvest-id": str(package["harvest_id"]),
        "job-id": str(f.job_id),
        "role": f.role,
        "sha512": f.sha512 or "",
    }

    def on_retry(attempt: int, exc: BaseException) -> None:
        with engine.begin() as conn:
            records.file_attempt(conn, f.job_id, f.file_name)
            records.add_event(
                conn, f.job_id, "retry", f"{copy.name} copy: attempt {attempt}: {exc}", f.file_name
            )

    checksum: str = with_backoff(
        lambda: store.upload(
            local,
            f.s3_key,
            size=f.size,
            sha256_hex=f.sha256,
            metadata=metadata,
            on_bytes=progress.advance,
            part_digests=staged_parts.get(f.file_name),
        ),
        what=f"upload {f.s3_key} ({copy.name} copy)",
        attempts=3,
        base_delay_s=cfg.retry_base_delay_s,
        max_delay_s=cfg.retry_max_delay_s,
        on_retry=on_retry,
    )
    _count(summary, copy, "uploaded")
    _count(summary, copy, "bytes", f.size)
    return checksum


def _verify_file(
    engine: sa.Engine,
    copies: list[Copy],
    cfg: PreservationConfig,
    f: FileRow,
    checksums: dict[str, str | None],
    t0: float,
    summary: dict[str, Any],
) -> None:
    """HEAD (+ full re-read for the sample) in every copy, then mark the file verified."""
    reread = f.role != "data" or sampled_for_reread(f.sha256, cfg.verify_sample_rate)
    for copy in copies:
        try:
            copy.store.verify(
                f.s3_key,
                size=f.size,
                sha256_hex=f.sha256,
                s3_checksum=checksums.get(copy.name),
                reread=reread,
            )
        except SeriousError as exc:
            exc.file_name = exc.file_name or f.file_name
            exc.reason = f"{copy.name} copy: {exc.reason}"
            raise
        with engine.begin() as conn:
            records.set_copy(conn, f.job_id, f.file_name, copy.name, "verified")
    summary["reread"] += int(reread)
    with engine.begin() as conn:
        records.file_verified(
            conn, f.job_id, f.file_name, reread=reread, seconds=time.monotonic() - t0
        )
    log.info(
        "%s: stored and verified in %d copies%s (%s)",
        f.file_name,
        len(copies),
        " (re-read)" if reread else "",
        f.ark or f.role,
    )


def _to_manual(
    engine: sa.Engine, job_id: int, exc: SeriousError, summary: dict[str, Any]
) -> dict[str, Any]:
    reason = f"{exc.kind}: {exc.reason}"
    log.error("job %s: to the manual queue: %s", job_id, reason)
    with engine.begin() as conn:
        if exc.file_name:
            records.file_error(conn, job_id, exc.file_name, "manual", reason)
        records.set_package_status(conn, job_id, "manual", reason)
        records.add_event(conn, job_id, "manual", reason, exc.file_name)
    return {**summary, "status": Outcome.MANUAL, "error": reason}


def _cleanup(
    engine: sa.Engine,
    settings: Settings,
    cfg: PreservationConfig,
    job_id: int,
    bag_path: Path,
    files: list[FileRow],
    allow_job_dir: bool,
) -> None:
    """After the package is preserved: empty the temporary zone, and delete sources if asked."""
    if cfg.delete_local_after_verify:
        try:
            with engine.connect() as conn:
                job = load_job(conn, job_id)
                found = job_files(conn, job, allow_job_dir=allow_job_dir)
        except (NotReady, SeriousError) as exc:
            log.warning("job %s: local copies kept, cannot resolve them: %s", job_id, exc)
            found = []
        sources = {s.name: s.path for s in found}
        verified = {f.file_name: f.size for f in files if f.role != "manifest"}
        for name, path in sources.items():
            if name in verified and path.is_file() and path.stat().st_size == verified[name]:
                path.unlink()
                with engine.begin() as conn:
                    records.file_local_deleted(conn, job_id, name)
                log.info("job %s: local copy %s removed (preserved and verified)", job_id, path)
    if cfg.remove_staging_after_ingest and bag_path.exists():
        shutil.rmtree(bag_path)
        parts_file_for(bag_path).unlink(missing_ok=True)
        log.info("job %s: staged bag %s removed from the temporary zone", job_id, bag_path)


def jobs_ready_for_preservation(
    settings: Settings | None = None, *, include_unindexed: bool = False
) -> list[int]:
    """DONE jobs whose WARCs all reached the repository and that are not preserved nor queued.

    ``include_unindexed`` adds DONE jobs with no row in the indexing manifest (ingested from
    ``jobs.job_dir``/warcs); off by default, since such a job is usually just not indexed yet.
    """
    settings = settings or get_settings()
    with get_engine(settings.harvest_db_url).connect() as conn:
        return jobs_ready(conn, include_unindexed=include_unindexed)
