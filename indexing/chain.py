"""The per-file indexing chain: ingest → index → transfer → backup → delete.

Why this shape (the BnF's): each module owns a working directory; when done with a file it
records it in the manifest, then moves the file (one rename) to the next module's directory. A
module killed anywhere leaves the file where it was, and running it again finishes the job
exactly once (paths chosen are recorded before anything is written under them). Entry points:
:func:`ingest` and :func:`process_file` (plain arguments, small results, no Airflow).
"""

from __future__ import annotations

import errno
import json
import logging
import shutil
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from harvestflow.atomic import place, stale_tmp_paths
from harvestflow.contracts.jobdir import JobDir
from harvestflow.db import get_engine
from harvestflow.progress import Progress
from harvestflow.settings import Settings, get_settings
from indexing import manifest
from indexing.backup import BackupTarget, copy_and_verify
from indexing.cdx import SUFFIX, NotAWarcError, index_warc, sorted_lines, write_lines_atomic
from indexing.crashpoints import crashpoint
from indexing.dedup_index import sidecar_lines
from indexing.errors import IndexingError
from indexing.files import Lock, copy_verified, move, sha1_of, single_instance
from indexing.layout import Layout, harvest_id_of, is_warc_name, job_id_of

log = logging.getLogger(__name__)


class NoSpaceError(IndexingError, RuntimeError):
    """No room for a file: no repository location has it, or a disk the chain writes to is
    full (the task fails and is retried)."""


_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class _Ctx:
    """Settings, engine, layout and backup target resolved once per call."""

    def __init__(self, settings: Settings | None) -> None:
        self.settings = settings or get_settings()
        self.engine: Engine = get_engine(self.settings.harvest_db_url)
        self.layout = Layout.from_settings(self.settings)
        self.backup = BackupTarget.from_settings(self.settings)


# --------------------------------------------------------------------------------------------
# ingest
def _queued(d: Path) -> int:
    return sum(1 for p in d.iterdir() if is_warc_name(p.name)) if d.is_dir() else 0


def ingest(settings: Settings | None = None) -> list[str]:
    """Take in the WARCs of finished jobs not yet in the manifest; returns their names.

    Each file is checksummed and placed (hard link, else copy) in the queue of the indexing
    worker with the fewest files queued. ``.open`` files (still being written) are never touched.
    """
    ctx = _Ctx(settings)
    with single_instance(ctx.layout.lock_dir(), Lock.INGEST):
        return _ingest(ctx)


def _ingest(ctx: _Ctx) -> list[str]:
    workers = ctx.layout.worker_dirs()
    for d in workers:
        d.mkdir(parents=True, exist_ok=True)
    queued = {d: _queued(d) for d in workers}
    candidates: list[tuple[int, int, Path]] = []
    for job_id, harvest_id, job_dir in manifest.finished_jobs(ctx.engine):
        warcs = JobDir(job_dir).warcs
        if not warcs.is_dir():
            log.warning("job %s: no warcs directory in %s", job_id, job_dir)
            continue
        for path in sorted(warcs.iterdir()):
            if is_warc_name(path.name) and path.is_file():
                candidates.append((job_id, harvest_id, path))
    known = manifest.known_names(ctx.engine, [p.name for _, _, p in candidates])
    taken: list[str] = []
    todo = [c for c in candidates if c[2].name not in known]
    with Progress("ingest", len(todo), unit="files") as progress:
        for job_id, job_harvest, path in todo:
            name = path.name
            existing = next((d for d in workers if (d / name).exists()), None)
            target = existing or min(workers, key=lambda d: (queued[d], d.name))
            size = path.stat().st_size
            sha1 = sha1_of(path)
            place(path, target / name)
            crashpoint("ingest.placed")
            harvest_id = harvest_id_of(name) or job_harvest
            if manifest.insert(
                ctx.engine,
                file_name=name,
                job_id=job_id,
                harvest_id=harvest_id,
                source_path=str(path),
                size=size,
                sha1=sha1,
                stage="ingested",
                worker=target.name,
                collection=ctx.layout.collection_of(harvest_id),
            ):
                taken.append(name)
                if existing is None:
                    queued[target] += 1
            crashpoint("ingest.recorded")
            progress.advance()
    taken += _take_in_strays(ctx, workers, queued)
    log.info("ingest: %d new files", len(taken))
    return taken


def _take_in_strays(ctx: _Ctx, workers: list[Path], queued: dict[Path, int]) -> list[str]:
    """WARCs put by hand in a module's working directory (not from a job): into the chain.

    Each module treats every file it finds in its directory: a WARC there that the manifest does
    not know (e.g. an old file dropped in for re-indexing) is registered with that copy as its
    source and goes through the whole chain from the index module. Runs after the jobs' files,
    so that a job file placed by an ingest killed before its manifest row is taken in with its
    job (above) and never mistaken for a stray. A stray whose name the manifest already holds is
    left alone, with a warning.
    """
    dirs = [*workers] + [ctx.layout.module_dir(m) for m in ("transfer", "backup", "delete")]
    found = [
        p
        for d in dirs
        if d.is_dir()
        for p in sorted(d.iterdir())
        if is_warc_name(p.name) and p.is_file()
    ]
    known = manifest.known_names(ctx.engine, [p.name for p in found])
    taken: list[str] = []
    for path in found:
        name = path.name
        if name in known:
            entry = manifest.get(ctx.engine, name)
            qdir = ctx.layout.quarantine_dir()
            if entry is not None and entry.stage == "quarantined" and not (qdir / name).exists():
                move(path, qdir)  # a quarantine killed between its manifest row and its move
                log.warning("%s: quarantined, moved there from %s", name, path.parent)
            elif entry is not None and entry.stage in ("done", "quarantined"):
                log.warning("%s: already %s, extra copy %s left alone", name, entry.stage, path)
            continue
        target = (
            path.parent
            if path.parent in workers
            else min(workers, key=lambda d: (queued[d], d.name))
        )
        size = path.stat().st_size
        sha1 = sha1_of(path)
        placed = move(path, target) if target != path.parent else path
        harvest_id = harvest_id_of(name)
        if manifest.insert(
            ctx.engine,
            file_name=name,
            job_id=manifest.existing_job(ctx.engine, job_id_of(name)),
            harvest_id=harvest_id,
            source_path=str(placed),
            size=size,
            sha1=sha1,
            stage="ingested",
            worker=target.name,
            collection=ctx.layout.collection_of(harvest_id),
        ):
            log.warning("%s: found in %s without a manifest row, taken in", name, path.parent)
            taken.append(name)
            queued[target] += 1
    return taken


# --------------------------------------------------------------------------------------------
# helpers shared by the modules
def _next_dir_after_transfer(ctx: _Ctx) -> Path:
    return ctx.layout.module_dir("backup" if ctx.backup else "delete")


def _expected_dir(ctx: _Ctx, entry: manifest.Entry) -> Path | None:
    if entry.stage == "ingested":
        return ctx.layout.module_dir("index") / (entry.worker or "w1")
    if entry.stage == "indexed":
        return ctx.layout.module_dir("transfer")
    if entry.stage == "transferred":
        return _next_dir_after_transfer(ctx)
    if entry.stage == "backedup":
        return ctx.layout.module_dir("delete")
    return None


def _local_copy(ctx: _Ctx, entry: manifest.Entry) -> Path:
    """The working copy of ``entry``, moved to the directory its stage says (see module doc)."""
    want = _expected_dir(ctx, entry)
    assert want is not None
    if (want / entry.file_name).exists():
        return want / entry.file_name
    dirs = [*ctx.layout.worker_dirs()] + [
        ctx.layout.module_dir(m) for m in ("transfer", "backup", "delete")
    ]
    for d in dirs:
        if (d / entry.file_name).exists():
            return move(d / entry.file_name, want)
    src = Path(entry.source_path)
    if not src.exists():
        raise FileNotFoundError(f"{entry.file_name}: no working copy and no source {src}")
    place(src, want / entry.file_name)
    return want / entry.file_name


def _remove_stale_copies(ctx: _Ctx, file_name: str) -> None:
    """Remove the temporary names of ``file_name`` that killed runs left in the working
    directories (a kill between a placement's link and its rename; the rerun placed the file
    under a name of its own). Called once the file is done or quarantined: no run still places
    or copies it then."""
    for d in [
        *ctx.layout.worker_dirs(),
        *(ctx.layout.module_dir(m) for m in ("transfer", "backup", "delete")),
    ]:
        for stale in stale_tmp_paths(d / file_name):
            log.info("%s: removing %s, left by a run killed while writing it", file_name, stale)
            stale.unlink(missing_ok=True)


def _cdx_base(ctx: _Ctx, entry: manifest.Entry) -> Path:
    """Per-file index path without suffix, fixed in the manifest before the first write."""
    if entry.cdx_path:
        return Path(entry.cdx_path)
    today = datetime.now(UTC).date()
    base = ctx.layout.cdx_daily(today, entry.collection) / entry.file_name
    manifest.update(ctx.engine, entry.file_name, cdx_path=str(base))
    entry.cdx_path = str(base)
    return base


def _day_of(cdx_base: Path) -> date:
    return date.fromisoformat(cdx_base.parent.name)


def _quarantine(ctx: _Ctx, entry: manifest.Entry, local: Path, error: str, lines: dict) -> None:
    qdir = ctx.layout.quarantine_dir()
    for fmt, fmt_lines in lines.items():
        write_lines_atomic(fmt_lines, qdir / (entry.file_name + SUFFIX[fmt]))
    reason = {"file": entry.file_name, "source": entry.source_path, "error": error}
    write_lines_atomic([json.dumps(reason)], qdir / (entry.file_name + ".reason.json"))
    manifest.update(ctx.engine, entry.file_name, stage="quarantined", quarantined=True, error=error)
    crashpoint("quarantine.recorded")
    move(local, qdir)
    log.error("%s quarantined: %s", entry.file_name, error)


# --------------------------------------------------------------------------------------------
# modules
def index_module(ctx: _Ctx, entry: manifest.Entry) -> None:
    """CDX lines of every record, per file and sorted; damaged files go to quarantine."""
    local = _local_copy(ctx, entry)
    base = _cdx_base(ctx, entry)
    try:
        result = index_warc(local, verify=bool(ctx.settings["indexing"].get("verify_gzip", True)))
    except NotAWarcError as exc:
        _quarantine(ctx, entry, local, f"rejected: {exc}", {})
        return
    lines = {fmt: sorted_lines(result.lines(fmt, entry.file_name)) for fmt in ctx.layout.formats}
    if result.damage is not None:
        error = f"{local.name}: {result.damage_text()} ({len(result.captures)} records kept)"
        _quarantine(ctx, entry, local, error, lines)
        return
    for fmt, fmt_lines in lines.items():
        write_lines_atomic(fmt_lines, base.with_name(base.name + SUFFIX[fmt]))
        crashpoint(f"index.wrote_{fmt}")
    if entry.harvest_id is not None:
        sidecar = ctx.layout.dedup_dir(entry.harvest_id, entry.collection) / (
            entry.file_name + ".dedup"
        )
        write_lines_atomic(sidecar_lines(result.captures, entry.file_name), sidecar)
        crashpoint("index.dedup_written")
    manifest.update(
        ctx.engine, entry.file_name, stage="indexed", indexed_at=True, records=len(result.captures)
    )
    crashpoint("index.recorded")
    move(local, ctx.layout.module_dir("transfer"))
    entry.stage = "indexed"


def _choose_location(ctx: _Ctx, entry: manifest.Entry) -> Path:
    if entry.final_path:
        return Path(entry.final_path)
    section = ctx.settings["indexing"]
    min_free = int(section.get("min_free_bytes", 0))
    size = entry.size or 0
    for loc in section.get("repository_locations") or []:
        root = Path(loc) if Path(loc).is_absolute() else ctx.settings.data_dir / loc
        root.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(root).free
        if free - size >= min_free:
            hid = entry.harvest_id if entry.harvest_id is not None else "unknown"
            final = root / str(hid) / entry.file_name
            manifest.update(ctx.engine, entry.file_name, final_path=str(final))
            entry.final_path = str(final)
            return final
        log.warning("repository %s: %d bytes free, %d needed + %d kept", root, free, size, min_free)
    raise NoSpaceError(
        f"{entry.file_name}: no repository location has {size} bytes free; free space or add a"
        " location to [indexing] repository_locations, then the file is retried"
    )


def transfer_module(ctx: _Ctx, entry: manifest.Entry) -> None:
    """Verified copy to the final location, then the file's PATH line."""
    local = _local_copy(ctx, entry)
    final = _choose_location(ctx, entry)
    assert entry.sha1 is not None
    if not (
        final.is_file() and final.stat().st_size == entry.size and sha1_of(final) == entry.sha1
    ):
        try:
            copy_verified(local, final, entry.sha1)
        except OSError as exc:
            if exc.errno not in _DISK_FULL:
                raise
            # the location filled up after it was chosen: nothing is there under the final name
            # (and no PATH line names it yet), so the next attempt may choose again
            manifest.update(ctx.engine, entry.file_name, final_path=None)
            entry.final_path = None
            raise NoSpaceError(
                f"{entry.file_name}: {final.parent} filled up during the copy (the partial copy"
                " is removed; the next attempt picks a location with room)"
            ) from exc
    crashpoint("transfer.copied")
    base = Path(entry.cdx_path) if entry.cdx_path else _cdx_base(ctx, entry)
    path_file = ctx.layout.path_daily(_day_of(base), entry.collection) / (entry.file_name + ".path")
    write_lines_atomic([f"{entry.file_name}\t{final}"], path_file)
    crashpoint("transfer.path_written")
    manifest.update(ctx.engine, entry.file_name, stage="transferred", transferred_at=True)
    crashpoint("transfer.recorded")
    move(local, _next_dir_after_transfer(ctx))
    entry.stage = "transferred"


def backup_module(ctx: _Ctx, entry: manifest.Entry) -> None:
    """Verified copy to the backup directory or bucket."""
    assert ctx.backup is not None and entry.sha1 is not None
    local = _local_copy(ctx, entry)
    location = entry.backup_location or ctx.backup.location(entry.harvest_id, entry.file_name)
    if not entry.backup_location:
        manifest.update(ctx.engine, entry.file_name, backup_location=location)
        entry.backup_location = location
    copy_and_verify(local, location, entry.sha1, entry.size or 0, ctx.settings)
    crashpoint("backup.copied")
    manifest.update(ctx.engine, entry.file_name, stage="backedup", backed_up_at=True)
    crashpoint("backup.recorded")
    move(local, ctx.layout.module_dir("delete"))
    entry.stage = "backedup"


def delete_module(ctx: _Ctx, entry: manifest.Entry) -> None:
    """Remove the working copy from the indexing machine once its copies are in place."""
    final = Path(entry.final_path or "")
    if not (entry.final_path and final.is_file() and final.stat().st_size == entry.size):
        raise RuntimeError(f"{entry.file_name}: final copy {final} missing, not deleting")
    if ctx.backup is not None and not entry.backup_location:
        raise RuntimeError(f"{entry.file_name}: no verified backup recorded, not deleting")
    local = ctx.layout.module_dir("delete") / entry.file_name
    if not local.exists():
        # the copy may still sit in an earlier directory after a crash between two steps
        for d in [
            *ctx.layout.worker_dirs(),
            ctx.layout.module_dir("transfer"),
            ctx.layout.module_dir("backup"),
        ]:
            if (d / entry.file_name).exists():
                local = d / entry.file_name
    _remove_stale_copies(ctx, entry.file_name)
    local.unlink(missing_ok=True)
    crashpoint("delete.unlinked")
    manifest.update(ctx.engine, entry.file_name, stage="done", deleted_at=True)
    entry.stage = "done"


def process_file(file_name: str, settings: Settings | None = None) -> dict[str, Any]:
    """Run the remaining per-file modules for ``file_name``; returns its final stage and records.

    Idempotent and restartable: calling it again after a crash (or for a finished file) finishes
    what is left and does nothing twice.
    """
    ctx = _Ctx(settings)
    entry = manifest.get(ctx.engine, file_name)
    if entry is None:
        raise KeyError(f"{file_name}: not in the index manifest (run ingest first)")
    steps = {
        "ingested": index_module,
        "indexed": transfer_module,
        "transferred": backup_module if ctx.backup else delete_module,
        "backedup": delete_module,
    }
    if entry.stage == "quarantined":  # a crash may have left it before its move
        for d in ctx.layout.worker_dirs():
            if (d / file_name).exists():
                move(d / file_name, ctx.layout.quarantine_dir())
    while entry.stage in steps:
        before = entry.stage
        try:
            steps[entry.stage](ctx, entry)
        except OSError as exc:
            if exc.errno not in _DISK_FULL:
                raise
            # the module wrote under temporary names only (removed on the error) and recorded
            # nothing: the retry, once there is room, takes the file up at this same stage
            where = exc.filename or ctx.settings.data_dir
            raise NoSpaceError(
                f"{file_name}: no space left on the disk of {where} at its {before} stage;"
                " free space there, then the file is retried from that stage"
            ) from exc
        entry = manifest.get(ctx.engine, file_name) or entry
        if entry.stage == before:  # pragma: no cover - a module must move the stage on
            raise RuntimeError(f"{file_name}: stage {before} did not advance")
    if entry.stage == "quarantined":
        _remove_stale_copies(ctx, file_name)  # "done" removed them before its last step
    return {
        "file": file_name,
        "stage": entry.stage,
        "records": entry.records,
        "quarantined": entry.quarantined,
        "error": entry.error,
    }


def pending_files(settings: Settings | None = None) -> list[str]:
    """Files ingested but not at the end of the chain (what the hourly sweep maps over)."""
    ctx = _Ctx(settings)
    stages = ("ingested", "indexed", "transferred", "backedup")
    return [e.file_name for e in manifest.in_stages(ctx.engine, stages)]


def run_chain(settings: Settings | None = None) -> dict[str, Any]:
    """Ingest, then every pending file through the per-file modules (CLI and single-box use)."""
    taken = ingest(settings)
    results = [process_file(name, settings) for name in pending_files(settings)]
    return {
        "ingested": len(taken),
        "processed": len(results),
        "done": sum(1 for r in results if r["stage"] == "done"),
        "quarantined": [r["file"] for r in results if r["quarantined"]],
    }
