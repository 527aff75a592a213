"""The text-extraction module of the indexing chain: every WARC, once, into the search index.

Why beside the file chain rather than a step in it: extraction (PDFs) is slower than indexing
and must never hold a file back from transfer, backup and preservation; it keeps its own state,
so a failure here leaves replay untouched. Text is extracted only for new payload digests;
records are written in batches with the file's checkpoint, so a killed process resumes after
the last batch, and a damaged record is skipped and named with its offset.

The harvest database (manifest, search backend) is imported by the chain's entry points only
(``extract_file``, ``pending_files``, ``reindex``): ``extract_warc`` is handed its backend, and a
process that only extracts does not load SQLAlchemy (~0.2 CPU-second per process, measured).
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from warcio.recordloader import ArcWarcRecord

from harvestflow.formats.cdx import mime_of
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.surt import surt_or_url
from harvestflow.progress import Progress
from harvestflow.settings import Settings, get_settings
from indexing.crashpoints import crashpoint
from indexing.layout import Layout
from indexing.textscan import Damage, Record, read_records
from search.extract import ExtractionError, extract, kind_of
from search.model import CaptureRecord, Document, FileProgress, SearchBackend

if TYPE_CHECKING:
    from indexing import manifest

log = logging.getLogger(__name__)

READY_STAGES = ("indexed", "transferred", "backedup", "done")  # after the index module
_domain_of = functools.lru_cache(maxsize=65536)(registrable_domain)  # hosts repeat in a file
MAX_ERRORS_KEPT = 100
QUEUE_BYTES = 64_000_000  # payload bytes held before their digests are looked up at once
_NETLOC = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")


@functools.lru_cache(maxsize=65536)
def _host_of_netloc(netloc: str) -> str:
    return (urlsplit("//" + netloc).hostname or "").lower()


def _host(url: str) -> str:
    """``urlsplit(url).hostname``, lower-cased, parsed once per distinct netloc of the file."""
    match = _NETLOC.match(url)
    if match is None or any(c in url for c in "\t\r\n"):
        return (urlsplit(url).hostname or "").lower()
    return _host_of_netloc(match.group(1))


@dataclass(frozen=True)
class FileMeta:
    """What the manifest knows about a WARC, copied onto each of its captures."""

    file_name: str
    collection: str = ""
    harvest_id: int | None = None
    job_id: int | None = None


def _limits(settings: Settings) -> tuple[int, int]:
    batch = int(settings.get("fulltext", "batch_records", 200))
    max_payload = int(settings.get("fulltext", "max_payload_bytes", 20_000_000))
    return max(1, batch), max_payload


def _wanted(rec: ArcWarcRecord) -> bool:
    """Read the payload of this record? (Only 2xx responses of a type we extract.)"""
    if rec.rec_type != "response" or rec.http_headers is None:
        return False
    status = rec.http_headers.get_statuscode()
    return (
        bool(status and status.startswith("2"))
        and kind_of(mime_of(rec.http_headers.get_header("Content-Type"))) is not None
    )


def _capture(rec: ArcWarcRecord, offset: int, meta: FileMeta) -> CaptureRecord | None:
    """The capture of a response/revisit record of a text type (None for any other record)."""
    if rec.rec_type not in ("response", "revisit"):
        return None
    url = rec.rec_headers.get_header("WARC-Target-URI") or ""
    if not url.startswith(("http:", "https:")):
        return None
    http = rec.http_headers
    content_type = http.get_header("Content-Type") if http is not None else None
    mime = mime_of(content_type) or ""
    if rec.rec_type == "response" and kind_of(mime) is None:
        return None
    if rec.rec_type == "revisit" and mime and kind_of(mime) is None:
        return None
    digest = rec.rec_headers.get_header("WARC-Payload-Digest")
    date = rec.rec_headers.get_header("WARC-Date") or ""
    if not digest or not date:
        return None
    status_text = http.get_statuscode() if http is not None else None
    status = int(status_text) if status_text and status_text.isdigit() else None
    host = _host(url)
    return CaptureRecord(
        file_name=meta.file_name,
        offset=offset,
        url=url,
        surt=surt_or_url(url),
        host=host,
        domain=_domain_of(host) if host else "",
        captured_at=datetime.fromisoformat(date.replace("Z", "+00:00")),
        status=status,
        mime=mime,
        digest=digest,
        record_type=rec.rec_type,
        collection=meta.collection,
        harvest_id=meta.harvest_id,
        job_id=meta.job_id,
    )


def extract_warc(
    path: Path,
    meta: FileMeta,
    backend: SearchBackend,
    settings: Settings | None = None,
    *,
    progress_bar: bool = False,
) -> FileProgress:
    """Extract ``path`` into ``backend``, resuming from its checkpoint; returns the counts.

    Records are taken a batch at a time: the batch's new digests are looked up in the backend
    in one call (not one round trip per record), then its records are handled in file order
    and written with the checkpoint. A batch also ends when its payloads pass ``QUEUE_BYTES``.
    """
    settings = settings or get_settings()
    batch_size, max_payload = _limits(settings)
    state = backend.progress(meta.file_name) or FileProgress(meta.file_name)
    if state.done:
        return state
    if state.resume_offset >= 0:
        log.info("%s: resuming after the record at offset %d", meta.file_name, state.resume_offset)
    seen: set[str] = set()  # digests whose text this run has stored or queued
    queue: list[Record | Damage] = []
    queued_bytes = 0
    size = path.stat().st_size
    with Progress(f"extract {meta.file_name}", size, unit="bytes", bar=progress_bar) as bar:
        for item in read_records(path, max(state.resume_offset, 0), _wanted, max_payload):
            if item.offset <= state.resume_offset:
                continue  # taken into account before the restart
            queue.append(item)
            if isinstance(item, Record) and item.payload is not None:
                queued_bytes += len(item.payload)
            state.resume_offset = item.offset
            bar.advance(max(0, item.offset - bar.done))
            if len(queue) >= batch_size or queued_bytes >= QUEUE_BYTES:
                _write_batch(queue, meta, backend, state, seen)
                crashpoint("fulltext.batch_written")
                queue, queued_bytes = [], 0
        state.done = True
        _write_batch(queue, meta, backend, state, seen)
        crashpoint("fulltext.done_recorded")
    log.info(
        "%s: %d documents extracted, %d duplicate captures, %d skipped, %d failed",
        meta.file_name,
        state.extracted,
        state.duplicates,
        state.skipped,
        state.failed,
    )
    return state


def _write_batch(
    queue: list[Record | Damage],
    meta: FileMeta,
    backend: SearchBackend,
    state: FileProgress,
    seen: set[str],
) -> None:
    """Handle the queued records in file order, then store them with the checkpoint ``state``."""
    prepared: list[tuple[Record | Damage, CaptureRecord | ValueError | None]] = []
    for item in queue:
        if isinstance(item, Damage):
            prepared.append((item, None))
            continue
        try:
            prepared.append((item, _capture(item.record, item.offset, meta)))
        except ValueError as exc:  # a WARC-Date that is no date, ...
            prepared.append((item, exc))
    asked = {
        cap.digest
        for item, cap in prepared
        if isinstance(cap, CaptureRecord)
        and cap.record_type == "response"
        and not _error_page(cap)
        and cap.digest not in seen
    }
    known = backend.known_digests(sorted(asked)) if asked else set()
    docs: list[Document] = []
    caps: list[CaptureRecord] = []
    for item, cap in prepared:
        if isinstance(item, Damage):
            _damaged(item, meta, state)
        elif isinstance(cap, ValueError):
            _fail(state, meta, item.offset, f"unreadable record headers: {cap}")
        elif cap is not None:
            _take(item, cap, meta, known, state, seen, docs, caps)
    backend.add(docs, caps, state)


def _error_page(cap: CaptureRecord) -> bool:
    """An error page, a redirect: no text worth finding (nor a digest worth looking up)."""
    return cap.status is not None and not 200 <= cap.status < 300


def _damaged(item: Damage, meta: FileMeta, state: FileProgress) -> None:
    state.failed += 1
    where = f"resumed at {item.resumed_at}" if item.resumed_at else "nothing after it"
    log.error(
        "%s: damaged record at offset %d skipped (%s; %s)",
        meta.file_name,
        item.offset,
        item.error,
        where,
    )
    if len(state.errors) < MAX_ERRORS_KEPT:
        state.errors.append({"offset": item.offset, "error": item.error})


def _take(
    item: Record,
    cap: CaptureRecord,
    meta: FileMeta,
    known: set[str],
    state: FileProgress,
    seen: set[str],
    docs: list[Document],
    caps: list[CaptureRecord],
) -> None:
    rec = item.record
    if _error_page(cap):
        state.skipped += 1
        return
    if rec.rec_type == "revisit" or cap.digest in seen or cap.digest in known:
        state.duplicates += 1
        caps.append(cap)
        return
    if item.payload is None:
        state.skipped += 1
        return
    if item.truncated:
        state.skipped += 1
        log.warning(
            "%s: payload at offset %d larger than the limit, not extracted",
            meta.file_name,
            item.offset,
        )
        return
    content_type = rec.http_headers.get_header("Content-Type") if rec.http_headers else None
    try:
        got = extract(item.payload, cap.mime, content_type)
    except ExtractionError as exc:
        _fail(state, meta, item.offset, str(exc))
        return
    except Exception as exc:  # an extractor bug on one odd payload must not stop the file
        _fail(state, meta, item.offset, f"{type(exc).__name__}: {exc}")
        return
    if not got.text and not got.title:
        state.skipped += 1
        return
    seen.add(cap.digest)
    state.extracted += 1
    docs.append(Document(cap.digest, got.title, got.text, got.lang, got.outlinks))
    caps.append(cap)


def _fail(state: FileProgress, meta: FileMeta, offset: int, error: str) -> None:
    state.failed += 1
    log.error("%s: record at offset %d not extracted: %s", meta.file_name, offset, error)
    if len(state.errors) < MAX_ERRORS_KEPT:
        state.errors.append({"offset": offset, "error": error})


# --------------------------------------------------------------------------------------------
# the chain's entry points
def _readable_copy(layout: Layout, entry: manifest.Entry) -> Path | None:
    """Where the chain has the file now: its repository copy, else a working copy."""
    final = Path(entry.final_path) if entry.final_path else None
    if final is not None and final.is_file() and final.stat().st_size == entry.size:
        return final
    dirs = [*layout.worker_dirs()] + [
        layout.module_dir(m) for m in ("transfer", "backup", "delete")
    ]
    for d in dirs:
        if (d / entry.file_name).is_file():
            return d / entry.file_name
    src = Path(entry.source_path)
    return src if src.is_file() else None


def extract_file(
    file_name: str,
    settings: Settings | None = None,
    backend: SearchBackend | None = None,
    *,
    progress_bar: bool = False,
) -> dict[str, Any]:
    """Extract one WARC of the chain (idempotent: a finished file is left as it is)."""
    from harvestflow.db import get_engine
    from indexing import manifest
    from search.backends import get_backend

    settings = settings or get_settings()
    if not settings.get("fulltext", "enabled", True):
        return {"file": file_name, "status": "disabled"}
    engine = get_engine(settings.harvest_db_url)
    entry = manifest.get(engine, file_name)
    if entry is None:
        raise KeyError(f"{file_name}: not in the index manifest (run ingest first)")
    if entry.stage not in READY_STAGES:
        log.info("%s: stage %s, not extracted", file_name, entry.stage)
        return {"file": file_name, "status": entry.stage}
    path = _readable_copy(Layout.from_settings(settings), entry)
    if path is None:
        raise FileNotFoundError(f"{file_name}: no readable copy (final path {entry.final_path})")
    backend = backend or get_backend(settings)
    meta = FileMeta(file_name, entry.collection, entry.harvest_id, entry.job_id)
    state = extract_warc(path, meta, backend, settings, progress_bar=progress_bar)
    return {
        "file": file_name,
        "status": "done",
        "extracted": state.extracted,
        "duplicates": state.duplicates,
        "skipped": state.skipped,
        "failed": state.failed,
        "errors": state.errors[:10],
    }


def pending_files(settings: Settings | None = None) -> list[str]:
    """Files past the index module whose extraction is not finished (what the DAG maps over)."""
    from harvestflow.db import get_engine
    from indexing import manifest
    from search.backends import get_backend

    settings = settings or get_settings()
    if not settings.get("fulltext", "enabled", True):
        return []
    engine = get_engine(settings.harvest_db_url)
    names = [e.file_name for e in manifest.in_stages(engine, READY_STAGES)]
    done = get_backend(settings).files_done(names) if names else set()
    return [n for n in names if n not in done]


def reindex(
    collection: str | None = None, settings: Settings | None = None, *, progress_bar: bool = False
) -> dict[str, int]:
    """Rebuild the search index from the WARCs (of one collection, or all)."""
    from harvestflow.db import get_engine
    from indexing import manifest
    from search.backends import get_backend

    settings = settings or get_settings()
    engine = get_engine(settings.harvest_db_url)
    entries = [
        e
        for e in manifest.in_stages(engine, READY_STAGES)
        if collection is None or e.collection == collection
    ]
    backend = get_backend(settings)
    backend.delete_files([e.file_name for e in entries])
    totals = {"files": 0, "extracted": 0, "duplicates": 0, "skipped": 0, "failed": 0}
    totals["unreadable_files"] = 0
    with Progress("reindex", len(entries), unit="files", bar=progress_bar) as progress:
        for e in entries:
            progress.advance()
            try:
                result = extract_file(e.file_name, settings, backend)
            except OSError as exc:  # a copy gone missing: named, the other files go on
                log.error("%s: not reindexed: %s", e.file_name, exc)
                totals["unreadable_files"] += 1
                continue
            totals["files"] += 1
            for key in ("extracted", "duplicates", "skipped", "failed"):
                totals[key] += int(result.get(key, 0))
    return totals
