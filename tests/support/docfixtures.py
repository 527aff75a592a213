"""Documents put straight into the document step's tables (through its store), for the tests
of what reads them (export, pages, QA) without a crawl."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from harvest import pipeline as p
from harvest.bootstrap import ensure_reference_data
from harvest.selection.importer import import_file
from harvest.selection.transfer import transfer_selection_records
from indexing.documents import store
from tests.support.crawl import FAST_TEMPLATE, run_crawl
from tests.support.publications_site import HOST, Site

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


WATCHED_DEFINITION = "ukwa-monthly-202601050900"


def register_watched_site(engine: sa.Engine, site: Site, data_dir: Path) -> int:
    """Import the site as a watched target and transfer it: its definition's id."""
    ensure_reference_data(engine)
    feed = data_dir / "feed.json"
    feed.parent.mkdir(parents=True, exist_ok=True)
    feed.write_text(json.dumps(watched_feed(site)))
    report = import_file(feed, check_urls=False, engine=engine, theme="gov")
    assert report.inserted == 1, report.text()
    definitions = transfer_selection_records(engine=engine)["definitions"]
    return int(definitions[WATCHED_DEFINITION])


def harvest_watched_site(engine: sa.Engine, site: Site, data_dir: Path) -> tuple[int, Path]:
    """Import the target, transfer it, generate and prepare its job, and crawl the site with it
    into the job's directory; (job id, job directory)."""
    harvest_id = register_watched_site(engine, site, data_dir)
    (job_id,) = p.generate_jobs(harvest_id, datetime(2026, 12, 6, tzinfo=UTC), engine=engine)
    spec_path = Path(p.prepare_job(job_id, data_dir, engine=engine))
    spec = json.loads(spec_path.read_text())
    spec["template"].update(FAST_TEMPLATE)
    spec["resolve"] = {HOST: "127.0.0.1"}
    run_crawl(spec, spec_path.parent)
    return job_id, spec_path.parent


def watched_feed(site: Site) -> list[dict]:
    return [
        {
            "id": 35,
            "title": "Office of Publications",
            "seeds": [site.url("/")],
            "schedules": [{"frequency": "MONTHLY", "startDate": "2026-01-05 09:00:00"}],
            "scope": "subdomains",
            "depth": "CAPPED",
            "watched": True,
            "documentUrlScheme": site.url("/publications/"),
        }
    ]
