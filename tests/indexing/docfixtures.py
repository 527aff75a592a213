"""Documents put straight into the document step's tables (through its store), for the tests
of what reads them (export, pages, QA) without a crawl."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from indexing.documents import store

WHEN = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
LANDING_AT = datetime(2026, 3, 4, 5, 6, 1, tzinfo=UTC)


def add(engine: sa.Engine, n: int, *, record_id: int = 7, available: bool = True) -> int:
    """Document ``n`` (a PDF of target ``record_id`` with a landing page); its id."""
    url = f"http://pubs.test/publications/files/report-{n}.pdf"
    digest = f"sha1:DIGEST{n:033d}"
    fields = {"title": f"Report {n}", "authors": ["Jane Smith"], "published": "2025-07-14",
              "language": "en", "isbn": "9781528612345", "doi": f"10.5555/r{n}"}  # fmt: skip
    with engine.begin() as conn:
        store.add_document(
            conn,
            store.NewDocument(
                digest, record_id, "pdf", "application/pdf", url, WHEN, 1000, fields, None
            ),
        )
        store.add_capture(conn, store.Capture(f"f{n}.warc.gz", 0, digest, url, WHEN, 1))
        doc_id = int(store.list_documents(conn, record_id=record_id)[-1]["document_id"])
        store.set_landing(
            conn, doc_id, f"http://pubs.test/publications/report-{n}", LANDING_AT,
            f"Report {n} (PDF)", fields, {"document": fields},
        )  # fmt: skip
        if available:
            store.record_check(conn, doc_id, True, f"replayed {n}", "availability check")
    return doc_id
