"""The document step's tables (sql/036): documents, their captures, pages and links, progress.

Why one module: these tables belong to the indexing stage's document step, and every query on
them is here (the curator pages, the CLI and QA call these functions). Every write is
idempotent (keyed by payload digest, or by file and offset), so a batch written twice after a
restart changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvestflow.audit import record_audit
from harvestflow.formats.seeds import SeedError, check_text
from indexing.documents import STATES as STATES  # re-exported: the store's callers use it
from indexing.errors import IndexingError

EDITABLE = ("title", "authors", "published", "language", "isbn", "issn", "doi")


@dataclass
class Capture:
    file_name: str
    offset: int
    digest: str
    url: str
    captured_at: datetime
    job_id: int | None


@dataclass
class NewDocument:
    digest: str
    record_id: int | None
    kind: str
    mime: str
    url: str
    captured_at: datetime
    size: int | None
    own: dict[str, Any]  # the document's own metadata (metadata.Found.as_dict)
    broken: str | None


@dataclass
class PageRow:
    file_name: str
    offset: int
    url: str
    captured_at: datetime
    job_id: int | None
    meta: dict[str, Any]
    links: list[tuple[str, str]]


# --------------------------------------------------------------------------------------------
# progress
def file_progress(conn: Connection, file_name: str) -> tuple[int, bool, dict[str, int]]:
    """(resume offset, done, counts) of a file (-1, False, {} when never started)."""
    row = conn.execute(
        sa.text("SELECT resume_offset, done, counts FROM document_files WHERE file_name = :f"),
        {"f": file_name},
    ).first()
    if row is None:
        return -1, False, {}
    return int(row.resume_offset), bool(row.done), dict(row.counts or {})


def files_done(conn: Connection, names: list[str]) -> set[str]:
    rows = conn.execute(
        sa.text(
            "SELECT file_name FROM document_files WHERE done"
            " AND file_name = ANY(CAST(:n AS text[]))"
        ),
        {"n": names},
    )
    return {r.file_name for r in rows}


def save_progress(
    conn: Connection,
    file_name: str,
    job_id: int | None,
    resume_offset: int,
    done: bool,
    counts: dict[str, int],
    errors: list[dict[str, Any]],
) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO document_files (file_name, job_id, resume_offset, done, counts, errors)"
            " VALUES (:f, :j, :o, :d, CAST(:c AS jsonb), CAST(:e AS jsonb))"
            " ON CONFLICT (file_name) DO UPDATE SET resume_offset = EXCLUDED.resume_offset,"
            " done = EXCLUDED.done, counts = EXCLUDED.counts, errors = EXCLUDED.errors,"
            " updated_at = now()"
        ),
        {
            "f": file_name,
            "j": job_id,
            "o": resume_offset,
            "d": done,
            "c": json.dumps(counts),
            "e": json.dumps(errors),
        },
    )


# --------------------------------------------------------------------------------------------
# the scan's writes
def known_digests(conn: Connection, digests: list[str]) -> set[str]:
    rows = conn.execute(
        sa.text("SELECT digest FROM documents WHERE digest = ANY(CAST(:d AS text[]))"),
        {"d": digests},
    )
    return {r.digest for r in rows}


def add_document(conn: Connection, doc: NewDocument) -> None:
    """A new document (its digest already stored: nothing changes)."""
    own = doc.own
    conn.execute(
        sa.text(
            "INSERT INTO documents (digest, record_id, kind, mime, url, captured_at, size,"
            " title, authors, published, language, isbn, issn, doi, sources, broken)"
            " VALUES (:digest, :record_id, :kind, :mime, :url, :captured_at, :size, :title,"
            " CAST(:authors AS text[]), :published, :language, :isbn, :issn, :doi,"
            " CAST(:sources AS jsonb), :broken) ON CONFLICT (digest) DO NOTHING"
        ),
        {
            "digest": doc.digest,
            "record_id": doc.record_id,
            "kind": doc.kind,
            "mime": doc.mime,
            "url": doc.url,
            "captured_at": doc.captured_at,
            "size": doc.size,
            "title": own.get("title"),
            "authors": own.get("authors") or [],
            "published": own.get("published"),
            "language": own.get("language"),
            "isbn": own.get("isbn"),
            "issn": own.get("issn"),
            "doi": own.get("doi"),
            "sources": json.dumps({"document": own}),
            "broken": doc.broken,
        },
    )


def add_capture(conn: Connection, cap: Capture) -> None:
    conn.execute(
        sa.text(
            'INSERT INTO document_captures (file_name, "offset", digest, url, captured_at, job_id)'
            " VALUES (:f, :o, :d, :u, :t, :j) ON CONFLICT DO NOTHING"
        ),
        {
            "f": cap.file_name,
            "o": cap.offset,
            "d": cap.digest,
            "u": cap.url,
            "t": cap.captured_at,
            "j": cap.job_id,
        },
    )


def add_page(conn: Connection, page: PageRow) -> None:
    conn.execute(
        sa.text(
            'INSERT INTO document_pages (file_name, "offset", url, captured_at, job_id, meta)'
            " VALUES (:f, :o, :u, :t, :j, CAST(:m AS jsonb)) ON CONFLICT DO NOTHING"
        ),
        {
            "f": page.file_name,
            "o": page.offset,
            "u": page.url,
            "t": page.captured_at,
            "j": page.job_id,
            "m": json.dumps(page.meta),
        },
    )
    if page.links:
        conn.execute(
            sa.text(
                'INSERT INTO document_links (file_name, "offset", target_url, link_text)'
                " VALUES (:f, :o, :u, :x) ON CONFLICT DO NOTHING"
            ),
            [
                {"f": page.file_name, "o": page.offset, "u": url, "x": text}
                for url, text in page.links
            ],
        )


# --------------------------------------------------------------------------------------------
# landing pages
def without_landing(conn: Connection, record_ids: list[int]) -> list[Any]:
    """The documents of these targets whose landing page is not found yet."""
    return list(
        conn.execute(
            sa.text(
                "SELECT document_id, digest, record_id, sources FROM documents"
                " WHERE landing_url IS NULL AND record_id = ANY(CAST(:r AS integer[]))"
                " ORDER BY document_id"
            ),
            {"r": record_ids},
        ).all()
    )


def landing_candidates(conn: Connection, digest: str) -> list[Any]:
    """The HTML pages linking to a capture of the document: the page, its metadata, the
    link's text, and how many documents it links to (a listing links to many)."""
    return list(
        conn.execute(
            sa.text(
                "WITH urls AS (SELECT DISTINCT url FROM document_captures WHERE digest = :d)"
                " SELECT p.url, p.captured_at, p.meta, l.link_text,"
                " (SELECT count(DISTINCT c.digest) FROM document_links l2"
                "   JOIN document_captures c ON c.url = l2.target_url"
                '   WHERE l2.file_name = p.file_name AND l2."offset" = p."offset") AS documents'
                " FROM document_links l JOIN urls ON urls.url = l.target_url"
                ' JOIN document_pages p ON p.file_name = l.file_name AND p."offset" = l."offset"'
                " ORDER BY p.captured_at, p.url"
            ),
            {"d": digest},
        ).all()
    )


def set_landing(
    conn: Connection,
    document_id: int,
    landing_url: str,
    landing_at: datetime,
    link_text: str,
    fields: dict[str, Any],
    sources: dict[str, Any],
) -> None:
    """The landing page found, and the fields merged from it (a curator's correction, if any,
    stays: a corrected document keeps its fields)."""
    conn.execute(
        sa.text(
            "UPDATE documents SET landing_url = :u, landing_captured_at = :t, link_text = :x,"
            " sources = CAST(:s AS jsonb), updated_at = now() WHERE document_id = :id"
        ),
        {
            "u": landing_url,
            "t": landing_at,
            "x": link_text,
            "s": json.dumps(sources),
            "id": document_id,
        },
    )
    conn.execute(
        sa.text(
            "UPDATE documents SET title = :title, authors = CAST(:authors AS text[]),"
            " published = :published, language = :language, isbn = :isbn, issn = :issn,"
            " doi = :doi WHERE document_id = :id AND NOT EXISTS (SELECT 1 FROM"
            " document_versions v WHERE v.document_id = :id AND v.action = 'correct')"
        ),
        {**{k: fields.get(k) for k in EDITABLE}, "authors": fields.get("authors") or [],
         "id": document_id},
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# reading (the CLI, the curator pages, QA)
def list_documents(
    conn: Connection,
    *,
    record_id: int | None = None,
    states: tuple[str, ...] | None = None,
    document_id: int | None = None,
) -> list[dict[str, Any]]:
    """Documents (of a target, in some states, or one), oldest first, with their captures."""
    rows = conn.execute(
        sa.text(
            "SELECT * FROM documents WHERE (CAST(:r AS integer) IS NULL OR record_id = :r)"
            " AND (CAST(:s AS text[]) IS NULL OR state = ANY(CAST(:s AS text[])))"
            " AND (CAST(:d AS bigint) IS NULL OR document_id = :d) ORDER BY document_id"
        ),
        {"r": record_id, "s": list(states) if states else None, "d": document_id},
    ).mappings()
    docs = [dict(r) for r in rows]
    if not docs:
        return docs
    caps = conn.execute(
        sa.text(
            'SELECT digest, url, captured_at, file_name, "offset", job_id FROM document_captures'
            " WHERE digest = ANY(CAST(:d AS text[])) ORDER BY captured_at, url"
        ),
        {"d": [d["digest"] for d in docs]},
    ).mappings()
    by_digest: dict[str, list[dict[str, Any]]] = {}
    for cap in caps:
        by_digest.setdefault(cap["digest"], []).append(dict(cap))
    for doc in docs:
        doc["captures"] = by_digest.get(doc["digest"], [])
    return docs


def _version(
    conn: Connection,
    document_id: int,
    user: str,
    action: str,
    before: dict[str, Any],
    after: dict[str, Any],
) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO document_versions (document_id, changed_by, action, before, after)"
            " VALUES (:d, :u, :a, CAST(:b AS jsonb), CAST(:f AS jsonb))"
        ),
        {
            "d": document_id,
            "u": user,
            "a": action,
            "b": json.dumps(before, default=str),
            "f": json.dumps(after, default=str),
        },
    )
    record_audit(conn, user, f"document.{action}", f"document {document_id}",
                 {"before": before, "after": after})  # fmt: skip


def record_check(
    conn: Connection, document_id: int, available: bool, detail: str, user: str
) -> None:
    """An availability check's outcome: a ``new`` document found replayable becomes
    ``available`` (one version row); otherwise only what the check saw is kept."""
    moved = conn.execute(
        sa.text(
            "UPDATE documents SET checked_at = now(), check_detail = :x, updated_at = now(),"
            " state = CASE WHEN :ok AND state = 'new' THEN 'available' ELSE state END"
            " WHERE document_id = :d RETURNING state"
        ),
        {"x": detail[:2000], "ok": available, "d": document_id},
    ).scalar_one_or_none()
    if available and moved == "available":
        _version(conn, document_id, user, "available", {"state": "new"}, {"state": "available"})


class DocumentError(IndexingError, ValueError):
    """A change a document cannot take (unknown id, a bad field, a state it cannot reach)."""


def _current(conn: Connection, document_id: int) -> dict[str, Any]:
    row = (
        conn.execute(
            sa.text("SELECT * FROM documents WHERE document_id = :d FOR UPDATE"),
            {"d": document_id},
        )
        .mappings()
        .first()
    )
    if row is None:
        raise DocumentError(f"no document {document_id}")
    return dict(row)


def correct(conn: Connection, document_id: int, user: str, fields: dict[str, Any]) -> list[str]:
    """A curator's correction of the metadata: the changed fields, kept as a new version (the
    values before and after); the landing page no longer overwrites them. Returns the fields
    changed (none: no version written)."""
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise DocumentError(f"not a document field: {', '.join(sorted(unknown))}")
    doc = _current(conn, document_id)
    new: dict[str, Any] = {}
    for key, value in fields.items():
        for text in value if isinstance(value, list) else [value]:
            try:
                check_text(str(text or ""), key)  # no NUL, valid UTF-8, bounded
            except SeedError as exc:
                raise DocumentError(str(exc)) from None
        if key == "authors":
            value = [a.strip() for a in (value or []) if a and a.strip()]
        else:
            value = (str(value).strip() or None) if value is not None else None
            if value is not None and len(value) > 2000:
                raise DocumentError(f"{key}: longer than 2000 characters")
        if value != (doc[key] if key != "authors" else list(doc[key] or [])):
            new[key] = value
    if not new:
        return []
    before = {k: doc[k] for k in new}
    sets = ", ".join(
        f"{k} = CAST(:{k} AS text[])" if k == "authors" else f"{k} = :{k}" for k in new
    )
    conn.execute(
        sa.text(f"UPDATE documents SET {sets}, updated_at = now() WHERE document_id = :id"),
        {**new, "id": document_id},
    )
    _version(conn, document_id, user, "correct", before, new)
    return sorted(new)


DECISIONS = {"catalogue": "catalogued", "reject": "rejected"}


def decide(conn: Connection, document_id: int, user: str, decision: str) -> str:
    """A curator catalogues or rejects an available document (a rejected one may be catalogued
    after all, and the reverse); a document not yet replayable cannot be catalogued."""
    if decision not in DECISIONS:
        raise DocumentError(f"unknown decision {decision!r} (catalogue or reject)")
    doc = _current(conn, document_id)
    state = DECISIONS[decision]
    if state == "catalogued" and doc["state"] not in ("available", "rejected"):
        raise DocumentError(
            f"document {document_id} is {doc['state']}: only an available document (replayed by"
            " the access service) can be catalogued"
        )
    if doc["state"] == state:
        return state
    conn.execute(
        sa.text("UPDATE documents SET state = :s, updated_at = now() WHERE document_id = :d"),
        {"s": state, "d": document_id},
    )
    _version(conn, document_id, user, decision, {"state": doc["state"]}, {"state": state})
    return state


def history(conn: Connection, document_id: int) -> list[dict[str, Any]]:
    """The document's versions, newest first."""
    rows = conn.execute(
        sa.text(
            "SELECT version_id, changed_at, changed_by, action, before, after"
            " FROM document_versions WHERE document_id = :d ORDER BY version_id DESC"
        ),
        {"d": document_id},
    ).mappings()
    return [dict(r) for r in rows]


def counts_by_target(conn: Connection, day: date | None = None) -> dict[int, dict[str, int]]:
    """Per target: documents found (and found on ``day``), available (or catalogued: they were
    available first), catalogued, and broken (QA's daily figures, the documents page)."""
    rows = conn.execute(
        sa.text(
            "SELECT record_id, count(*) AS found,"
            " count(*) FILTER (WHERE CAST(created_at AT TIME ZONE 'UTC' AS date)"
            "  = CAST(:day AS date)) AS found_on_day,"
            " count(*) FILTER (WHERE state IN ('available', 'catalogued')) AS available,"
            " count(*) FILTER (WHERE state = 'catalogued') AS catalogued,"
            " count(*) FILTER (WHERE broken IS NOT NULL) AS broken"
            " FROM documents WHERE record_id IS NOT NULL GROUP BY record_id ORDER BY record_id"
        ),
        {"day": day},
    )
    return {
        r.record_id: {
            "found": r.found,
            **({"found_on_day": r.found_on_day} if day is not None else {}),
            "available": r.available,
            "catalogued": r.catalogued,
            "broken": r.broken,
        }
        for r in rows
    }
