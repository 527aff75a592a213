"""The document step: a watched public body's site crawled by our crawler, its WARCs
taken through the step as the indexing chain maps it, the documents found exactly once each
with their landing pages and metadata."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from indexing import manifest
from indexing.documents import scan, store
from tests.support.docfixtures import harvest_watched_site
from tests.support.publications_site import serve

pytestmark = pytest.mark.services


def register_indexed(engine: sa.Engine, job_id: int, job_dir: Path) -> list[Path]:
    """The job's data WARCs entered in the index manifest as indexed (the chain's ingest and
    index modules' outcome, without their copies)."""
    warcs = sorted(w for w in (job_dir / "warcs").glob("*.warc.gz") if "-metadata-" not in w.name)
    assert warcs
    for warc in warcs:
        manifest.insert(
            engine,
            file_name=warc.name,
            job_id=job_id,
            source_path=str(warc),
            final_path=str(warc),
            size=warc.stat().st_size,
            stage="indexed",
        )
    return warcs


def test_documents_of_a_watched_site_found_once_with_landing_pages_and_metadata(
    db_engine, tmp_path
):
    with serve() as site:
        job_id, job_dir = harvest_watched_site(db_engine, site, tmp_path)
    warcs = register_indexed(db_engine, job_id, job_dir)
    pending = scan.pending_files()
    assert sorted(pending) == sorted(w.name for w in warcs)
    for name in pending:
        assert scan.extract_file(name)["status"] == "done"
    assert scan.pending_files() == []

    with db_engine.connect() as conn:
        docs = {Path(d["url"]).name: d for d in store.list_documents(conn)}
    # the privacy notice is outside the target's document URL scheme; the pages are no documents
    assert sorted(docs) == [
        "annual-report-2025.pdf",
        "guide.docx",
        "notes.pdf",
        "strategy-annex.pdf",
        "strategy.pdf",
    ]
    assert {d["state"] for d in docs.values()} == {"new"}

    annual = docs["annual-report-2025.pdf"]
    assert sorted(c["url"] for c in annual["captures"]) == [
        site.url("/publications/files/annual-report-2025.pdf"),
        site.url("/publications/files/mirror/annual-report-2025.pdf"),
    ]
    assert annual["landing_url"] == site.url("/publications/annual-report-2025")
    assert annual["link_text"] == "Download the annual report 2025 (PDF)"
    assert (annual["kind"], annual["broken"]) == ("pdf", None)
    assert annual["title"] == "Annual Report and Accounts 2025"
    assert annual["authors"] == ["Jane Smith", "Ravi Patel"]
    assert (annual["published"], annual["language"]) == ("2025-07-14", "en")
    assert (annual["isbn"], annual["issn"], annual["doi"]) == ("9781528612345", "2050-1234", None)

    strategy = docs["strategy.pdf"]
    assert strategy["landing_url"] == site.url("/publications/strategy")
    assert strategy["title"] == "Strategy 2026-2030"  # its own: the page has no catalogue title
    assert strategy["authors"] == ["Office of Strategy"]
    assert strategy["doi"] == "10.5555/strategy.2026"
    assert (strategy["published"], strategy["language"]) == ("2026-01-20", "en-GB")  # DC tags

    guide = docs["guide.docx"]
    assert (guide["kind"], guide["landing_url"]) == ("word", site.url("/publications/guide"))
    assert guide["title"] == "A Guide to Our Services"  # schema.org JSON-LD
    assert (guide["published"], guide["language"]) == ("2025-11-03", "cy")
    assert guide["authors"] == ["Services Team"]  # the file's own core properties

    # linked only from inside strategy.pdf (a link annotation): found, with its own metadata
    annex = docs["strategy-annex.pdf"]
    assert annex["title"] == "Strategy 2026-2030: annex"
    assert annex["authors"] == ["Office of Strategy"]
    assert annex["landing_url"] is None  # no page of the target links to it

    notes = docs["notes.pdf"]
    assert notes["broken"] and notes["broken"].startswith("unreadable pdf")
    assert notes["landing_url"] == site.url("/publications/")  # only the listing links it
    assert notes["title"] == "Meeting notes"  # the link's text
    assert len(notes["captures"]) == 1 and notes["captures"][0]["job_id"] == job_id

    # run again (a retried task, a second sweep): nothing read twice, nothing added
    for warc in warcs:
        assert (
            scan.extract_file(warc.name)["documents"] == (scan.extract_file(warc.name)["documents"])
        )
    with db_engine.connect() as conn:
        again = store.list_documents(conn)
        captures = conn.execute(sa.text("SELECT count(*) FROM document_captures")).scalar_one()
    assert len(again) == 5 and captures == 6


def test_a_job_of_no_watched_target_is_not_read(db_engine, tmp_path):
    with serve() as site:
        job_id, job_dir = harvest_watched_site(db_engine, site, tmp_path)
    warcs = register_indexed(db_engine, job_id, job_dir)
    with db_engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE jobs SET template = template - 'documents' WHERE job_id = :j"),
            {"j": job_id},
        )
    assert scan.pending_files() == []
    assert scan.extract_file(warcs[0].name)["status"] == "not watched"
