"""The document step, per WARC: documents, HTML pages and links of watched jobs' captures.

Why a module beside the file chain (like the full-text one): reading PDFs is slower than
indexing and must never hold a file back from transfer or preservation. It reads a file where
the chain left it, only when its job harvested watched targets (the mark the selection transfer
puts on their jobs: :func:`harvest.selection.watched.watched_jobs`), and keeps its own progress:
records are written with the file's resume offset every ``batch`` records, so a process killed
anywhere resumes after the last batch and writes nothing twice. A damaged record or a broken
document is named (the file's errors, the document's ``broken``) and reading goes on.

After each file, the landing pages of the targets' documents not yet placed are looked for
among every page read so far (a page may be in another file of the crawl than its document).
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection, Engine
from warcio.recordloader import ArcWarcRecord

from harvest.selection.watched import WatchedJob, WatchedTarget, watched_jobs, watched_targets
from harvestflow.db import get_engine
from harvestflow.formats.cdx import mime_of
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.urls import host_of
from harvestflow.settings import Settings, get_settings
from indexing import manifest
from indexing.crashpoints import crashpoint
from indexing.documents import detect, store
from indexing.documents.metadata import Found, document_metadata, merge, parse_page
from indexing.fulltext import READY_STAGES, _readable_copy
from indexing.layout import Layout
from indexing.textscan import Damage, Record, read_records

log = logging.getLogger(__name__)

HTML_MIMES = {"text/html", "application/xhtml+xml"}
MAX_ERRORS_KEPT = 100


def _limits(settings: Settings) -> tuple[int, int]:
    batch = int(settings.get("documents", "batch_records", 200))
    max_payload = int(settings.get("documents", "max_payload_bytes", 100_000_000))
    return max(1, batch), max_payload


def _mime(rec: ArcWarcRecord) -> str:
    http = rec.http_headers
    return (mime_of(http.get_header("Content-Type")) if http is not None else None) or ""


def _status(rec: ArcWarcRecord) -> int | None:
    text = rec.http_headers.get_statuscode() if rec.http_headers is not None else None
    return int(text) if text and text.isdigit() else None


def _wanted(rec: ArcWarcRecord) -> bool:
    """Read the payload? 2xx responses of HTML, a document type or a generic type."""
    if rec.rec_type != "response" or rec.http_headers is None:
        return False
    status = _status(rec)
    if status is None or not 200 <= status < 300:
        return False
    mime = _mime(rec).lower()
    return (
        mime in HTML_MIMES
        or detect.declared_kind(mime) is not None
        or (mime in detect.GENERIC_MIMES)
    )


class _Scan:
    """One file's scan: its job's targets, the counts and errors, the batch being built."""

    def __init__(self, file_name: str, job: WatchedJob, targets: list[WatchedTarget]) -> None:
        self.file_name = file_name
        self.job = job
        self.targets = targets
        self.domains = {registrable_domain(t.seed_url): t for t in targets}
        self.counts: dict[str, int] = {
            "documents": 0, "duplicates": 0, "broken": 0, "pages": 0, "failed": 0,
        }  # fmt: skip
        self.errors: list[dict[str, Any]] = []
        self.seen: set[str] = set()

    def target_of(self, url: str) -> WatchedTarget | None:
        """The watched target a URL belongs to: same registrable domain as its seed."""
        host = host_of(url)
        return self.domains.get(registrable_domain(url)) if host else None

    def error(self, offset: int, message: str) -> None:
        self.counts["failed"] += 1
        log.error("%s: record at offset %d: %s", self.file_name, offset, message)
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append({"offset": offset, "error": message})

    def take(self, conn: Connection, item: Record | Damage) -> None:
        if isinstance(item, Damage):
            self.error(item.offset, f"damaged record skipped ({item.error})")
            return
        rec = item.record
        if rec.rec_type not in ("response", "revisit"):
            return
        url = rec.rec_headers.get_header("WARC-Target-URI") or ""
        digest = rec.rec_headers.get_header("WARC-Payload-Digest") or ""
        date = rec.rec_headers.get_header("WARC-Date") or ""
        if not url.startswith(("http:", "https:")) or not digest or not date:
            return
        try:
            captured_at = datetime.fromisoformat(date.replace("Z", "+00:00"))
        except ValueError:
            self.error(item.offset, f"WARC-Date {date!r} is no date")
            return
        target = self.target_of(url)
        if target is None:
            return  # another site's capture (an embed, a link off the target)
        capture = store.Capture(
            self.file_name, item.offset, digest, url, captured_at, self.job.job_id
        )
        mime = _mime(rec).lower()
        if rec.rec_type == "revisit":
            # the same payload as an earlier capture: a document's when that one is
            if detect.in_scheme(url, self._schemes(target)) and mime not in HTML_MIMES:
                store.add_capture(conn, capture)
            return
        if item.payload is None:
            return
        if mime in HTML_MIMES:
            page = parse_page(item.payload, url)
            self.counts["pages"] += 1
            store.add_page(
                conn,
                store.PageRow(
                    self.file_name, item.offset, url, captured_at, self.job.job_id,
                    page.as_dict(), page.links,
                ),
            )  # fmt: skip
            return
        kind = detect.document_kind(mime, item.payload)
        if kind is None or not detect.in_scheme(url, self._schemes(target)):
            return
        store.add_capture(conn, capture)
        if digest in self.seen or store.known_digests(conn, [digest]):
            self.counts["duplicates"] += 1
            return
        self.seen.add(digest)
        broken: str | None
        if item.truncated:
            own, broken = Found(), "larger than the step's payload limit: metadata not read"
        else:
            own, broken = document_metadata(kind, item.payload)
        if broken:
            self.counts["broken"] += 1
            log.warning("%s: %s at offset %d: %s", self.file_name, url, item.offset, broken)
        self.counts["documents"] += 1
        store.add_document(
            conn,
            store.NewDocument(
                digest, target.record_id, kind, mime, url, captured_at,
                len(item.payload), own.as_dict(), broken,
            ),
        )  # fmt: skip

    def _schemes(self, target: WatchedTarget) -> tuple[str, ...]:
        return (target.url_scheme,) if target.url_scheme else ()


def scan_warc(
    engine: Engine,
    path: Path,
    file_name: str,
    job: WatchedJob,
    targets: list[WatchedTarget],
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Scan ``path`` (resuming from its progress), then place the targets' landing pages."""
    settings = settings or get_settings()
    batch, max_payload = _limits(settings)
    with engine.connect() as conn:
        resume, done, counts = store.file_progress(conn, file_name)
    scan = _Scan(file_name, job, targets)
    if not done:
        for key, value in counts.items():
            scan.counts[key] = int(value)
        pending = 0
        conn = engine.connect()
        trans = conn.begin()
        try:
            for item in read_records(path, max(resume, 0), _wanted, max_payload):
                if item.offset <= resume:
                    continue
                try:
                    with conn.begin_nested():
                        scan.take(conn, item)
                except Exception as exc:  # one odd record must not stop the file
                    scan.error(item.offset, f"{type(exc).__name__}: {exc}")
                resume = item.offset
                pending += 1
                if pending >= batch:
                    store.save_progress(
                        conn, file_name, job.job_id, resume, False, scan.counts, scan.errors
                    )
                    trans.commit()
                    crashpoint("documents.batch_written")
                    trans = conn.begin()
                    pending = 0
            store.save_progress(conn, file_name, job.job_id, resume, True, scan.counts, scan.errors)
            trans.commit()
        finally:
            if trans.is_active:
                trans.rollback()
            conn.close()
    placed = place_landing_pages(engine, [t.record_id for t in targets])
    log.info("%s: %s, %d landing page(s) placed", file_name, scan.counts, placed)
    return {"file": file_name, "status": "done", **scan.counts, "landing_pages": placed,
            "errors": scan.errors[:10]}  # fmt: skip


def _best(candidates: list[Any], target: WatchedTarget | None) -> Any | None:
    """The landing page among the pages linking to a document: the target's own pages; those
    with catalogue metadata first, then those offering fewest documents (a publication's page
    rather than the listing), then the earliest captured."""
    domain = registrable_domain(target.seed_url) if target else None
    own = [c for c in candidates if domain is None or registrable_domain(c.url) == domain]

    def rank(c: Any) -> tuple[int, int, datetime, str]:
        meta = dict(c.meta or {})
        tagged = any(meta.get(k) for k in ("authors", "published", "isbn", "issn", "doi"))
        return (0 if tagged else 1, int(c.documents or 0), c.captured_at, c.url)

    return min(own, key=rank) if own else None


def place_landing_pages(engine: Engine, record_ids: list[int]) -> int:
    """Find the landing page of the targets' documents that have none yet; the number found."""
    placed = 0
    with engine.begin() as conn:
        targets = {t.record_id: t for t in watched_targets(conn, record_ids)}
        for doc in store.without_landing(conn, record_ids):
            best = _best(store.landing_candidates(conn, doc.digest), targets.get(doc.record_id))
            if best is None:
                continue
            sources = dict(doc.sources or {})
            landing = dict(best.meta or {})
            sources["landing"] = landing
            own = Found(**{k: v for k, v in (sources.get("document") or {}).items()})
            fields = merge(own, landing, best.link_text or None)
            store.set_landing(
                conn, doc.document_id, best.url, best.captured_at, best.link_text or "",
                fields, sources,
            )  # fmt: skip
            placed += 1
    return placed


# --------------------------------------------------------------------------------------------
# the chain's entry points
def _watched_entries(engine: Engine) -> tuple[list[manifest.Entry], dict[int, WatchedJob]]:
    entries = manifest.in_stages(engine, READY_STAGES)
    job_ids = sorted({e.job_id for e in entries if e.job_id is not None})
    with engine.connect() as conn:
        jobs = watched_jobs(conn, job_ids)
    return [e for e in entries if e.job_id in jobs], jobs


def pending_files(settings: Settings | None = None) -> list[str]:
    """Files of watched jobs past the index module not yet scanned (what the DAG maps over)."""
    settings = settings or get_settings()
    engine = get_engine(settings.harvest_db_url)
    entries, _ = _watched_entries(engine)
    names = [e.file_name for e in entries]
    with engine.connect() as conn:
        done = store.files_done(conn, names) if names else set()
    return [n for n in names if n not in done]


def extract_file(file_name: str, settings: Settings | None = None) -> dict[str, Any]:
    """Scan one WARC of the chain (idempotent: a finished file is not read again)."""
    settings = settings or get_settings()
    engine = get_engine(settings.harvest_db_url)
    entry = manifest.get(engine, file_name)
    if entry is None:
        raise KeyError(f"{file_name}: not in the index manifest (run ingest first)")
    if entry.stage not in READY_STAGES:
        return {"file": file_name, "status": entry.stage}
    with engine.connect() as conn:
        jobs = watched_jobs(conn, [entry.job_id] if entry.job_id is not None else [])
        job = jobs.get(entry.job_id) if entry.job_id is not None else None
        targets = watched_targets(conn, list(job.record_ids)) if job else []
    if job is None or not targets:
        return {"file": file_name, "status": "not watched"}
    path = _readable_copy(Layout.from_settings(settings), entry)
    if path is None:
        raise FileNotFoundError(f"{file_name}: no readable copy (final path {entry.final_path})")
    return scan_warc(engine, path, file_name, job, targets, settings)
