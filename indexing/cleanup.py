"""cleanarcrepository: delete job WARCs once they are safely stored elsewhere.

Why so careful: this is the only step that destroys an original. A job's WARC is deleted only
when its manifest row says the whole chain finished (indexed, transferred, backed up if a backup
is configured), the final copy is there with the right size (and SHA-1, by default re-read), the
backup verifies, and (if configured) the preservation copy is verified. Quarantined files are
never deleted. Single instance: run it from one place only.

Whether preservation verified a copy is preservation's to say (its table); indexing sits below
preservation in the layering, so the caller hands the question in as a function
(``preservation.records.file_preserved``: the indexing_merge DAG and ``harvestflow index clean``
do), as the harvest DAG hands harvest the dedup index's writer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harvestflow.db import get_engine
from harvestflow.progress import Progress
from harvestflow.settings import Settings, get_settings
from indexing import manifest
from indexing.backup import BackupTarget, verify
from indexing.crashpoints import crashpoint
from indexing.errors import IndexingError
from indexing.files import Lock, sha1_of, single_instance
from indexing.layout import Layout

log = logging.getLogger(__name__)

# (engine, job id, file name) -> whether preservation verified its copy of that file
PreservedFn = Callable[[Any, int | None, str], bool]


def _why_not(
    entry: manifest.Entry, settings: Settings, engine: Any, preserved: PreservedFn | None
) -> str | None:
    """The reason ``entry``'s original may not be deleted yet, or None when it may."""
    section = settings["indexing"]
    if entry.quarantined or entry.stage != "done":
        return f"stage {entry.stage}"
    final = Path(entry.final_path or "")
    if not entry.final_path or not final.is_file() or final.stat().st_size != entry.size:
        return f"final copy {final} missing or of another size"
    if section.get("cleanup_verify_checksum", True) and sha1_of(final) != entry.sha1:
        return f"final copy {final} does not match the ingested SHA-1"
    if BackupTarget.from_settings(settings) is not None:
        if not entry.backup_location:
            return "no backup recorded"
        if not verify(entry.backup_location, entry.sha1 or "", entry.size or 0, settings):
            return f"backup {entry.backup_location} does not verify"
    if preserved is not None and not preserved(engine, entry.job_id, entry.file_name):
        return "preservation copy not verified"
    return None


def clean_arc_repository(
    settings: Settings | None = None, *, preserved: PreservedFn | None = None
) -> dict[str, Any]:
    """Delete the job originals of finished files; returns counts and what was kept and why.

    ``preserved`` answers whether preservation verified a file's copy; it is required when
    ``[indexing] cleanup_requires_preservation`` is set (nothing is deleted without it)."""
    settings = settings or get_settings()
    if not settings["indexing"].get("cleanup_requires_preservation"):
        preserved = None
    elif preserved is None:
        raise IndexingError(
            "[indexing] cleanup_requires_preservation is set, but this clean-up was given no"
            " way to ask preservation whether a copy is verified: run it through the"
            " indexing_merge DAG or `harvestflow index clean`, which pass"
            " preservation.records.file_preserved (nothing was deleted)"
        )
    with single_instance(Layout.from_settings(settings).lock_dir(), Lock.CLEANUP):
        return _clean(settings, preserved)


def _clean(settings: Settings, preserved: PreservedFn | None) -> dict[str, Any]:
    engine = get_engine(settings.harvest_db_url)
    entries = [e for e in manifest.in_stages(engine, ("done",)) if e.source_deleted_at is None]
    deleted: list[str] = []
    kept: dict[str, str] = {}
    with Progress(Lock.CLEANUP, len(entries), unit="files") as progress:
        for entry in entries:
            source = Path(entry.source_path)
            reason = _why_not(entry, settings, engine, preserved)
            if reason is not None:
                kept[entry.file_name] = reason
                log.warning("keeping %s: %s", source, reason)
            else:
                if source.exists():
                    source.unlink()
                crashpoint("cleanup.unlinked")
                manifest.update(engine, entry.file_name, source_deleted_at=True)
                deleted.append(entry.file_name)
            progress.advance()
    return {"deleted": len(deleted), "kept": kept}
