"""A document is offered (``available``) only once the access service finds its capture in our
CDX API and replays it with the same payload (#35 item 3); until then each check retries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing import chain, merge
from indexing.documents import availability, scan, store
from tests.support.docfixtures import harvest_watched_site
from tests.support.publications_site import serve
from tests.support.replay import access_settings, replay_venv  # noqa: F401 (fixtures)

pytestmark = pytest.mark.services


def states(engine: sa.Engine) -> dict[str, tuple[str, str | None]]:
    with engine.connect() as conn:
        return {
            d["url"].rsplit("/", 1)[-1]: (d["state"], d["check_detail"])
            for d in store.list_documents(conn)
        }


def test_no_document_is_available_until_its_capture_replays(db_engine, access_settings):  # noqa: F811
    settings = settings_mod.get_settings()
    with serve() as site:
        job_id, _ = harvest_watched_site(db_engine, site, settings.data_dir / "work")
    with db_engine.begin() as conn:  # the crawl ended: the job is DONE, the chain takes it in
        conn.execute(sa.text("UPDATE jobs SET status = 3 WHERE job_id = :j"), {"j": job_id})
    run = chain.run_chain(settings)
    assert run["done"] == run["processed"] >= 1 and not run["quarantined"], run
    for name in scan.pending_files(settings):
        scan.extract_file(name, settings)
    assert len(states(db_engine)) == 5

    # indexed, but no access service answering: nothing is offered
    assert availability.check_new(db_engine, settings)["available"] == 0
    assert {s for s, _ in states(db_engine).values()} == {"new"}
    assert {d for _, d in states(db_engine).values()} == {"the access service did not answer"}

    merge.daily_merge(datetime.now(UTC).date(), settings)
    merge.bigmerge(settings)
    service = ReplayService(settings)
    service.start()
    try:
        # one document's capture not in the index yet (its URL was never archived): it stays new
        with db_engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE document_captures SET url = url || '.later'"
                    " WHERE url LIKE '%/strategy.pdf'"
                )
            )
        counts = availability.check_new(db_engine, settings)
        assert counts == {"checked": 5, "available": 4, "not_yet": 1}, states(db_engine)
        found = states(db_engine)
        assert found["strategy.pdf"][0] == "new"
        assert "not in the CDX index yet" in (found["strategy.pdf"][1] or "")
        assert {found[n][0] for n in found if n != "strategy.pdf"} == {"available"}
        assert found["guide.docx"][1].startswith("replayed ")

        # indexed now: the next check (the next chain run) makes it available
        with db_engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE document_captures SET url = left(url, -6) WHERE url LIKE '%.later'")
            )
        assert availability.check_new(db_engine, settings) == {
            "checked": 1,
            "available": 1,
            "not_yet": 0,
        }
        assert {s for s, _ in states(db_engine).values()} == {"available"}
    finally:
        service.stop()
    with db_engine.connect() as conn:
        versions = conn.execute(
            sa.text("SELECT count(*) FROM document_versions WHERE action = 'available'")
        ).scalar_one()
    assert versions == 5
