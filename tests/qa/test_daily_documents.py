"""The daily QA reports, per watched target, its documents found, available and catalogued
(#35 item 5)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvest.bootstrap import ensure_reference_data
from harvest.selection.importer import import_file
from harvestflow import settings as settings_mod
from indexing.documents import store
from qa.daily import run_daily, summary_lines
from tests.support.docfixtures import add

pytestmark = pytest.mark.services


def test_daily_qa_counts_documents_per_watched_target(
    db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    settings_mod.reset()
    settings = settings_mod.get_settings()
    ensure_reference_data(db_engine)
    feed = tmp_path / "feed.json"
    feed.write_text(json.dumps([
        {"id": n, "title": title, "seeds": [f"http://{host}/"], "watched": watched,
         "schedules": [{"frequency": "MONTHLY"}], "scope": "subdomains", "depth": "CAPPED"}
        for n, title, host, watched in ((1, "Ministry", "gov.test", True),
                                        (2, "Quiet body", "quiet.test", True),
                                        (3, "News", "news.test", False))
    ]))  # fmt: skip
    assert import_file(feed, check_urls=False, engine=db_engine, theme="gov").inserted == 3
    with db_engine.connect() as conn:
        ids = dict(conn.execute(sa.text("SELECT title, record_id FROM selection_records")).all())
    ministry = ids["Ministry"]
    add(db_engine, 1, record_id=ministry)
    catalogued = add(db_engine, 2, record_id=ministry)
    add(db_engine, 3, record_id=ministry, available=False)
    with db_engine.begin() as conn:
        store.decide(conn, catalogued, "carol", "catalogue")

    today = datetime.now(UTC).date()
    summary = run_daily(today, settings, engine=db_engine)
    assert summary["documents"] == [
        {"record_id": ministry, "title": "Ministry", "watched": True, "found": 3,
         "found_on_day": 3, "available": 2, "catalogued": 1, "broken": 0},
        {"record_id": ids["Quiet body"], "title": "Quiet body", "watched": True, "found": 0,
         "found_on_day": 0, "available": 0, "catalogued": 0, "broken": 0},
    ]  # fmt: skip
    assert (
        f"  documents of target {ministry} (Ministry): 3 found (3 that day), 2 available,"
        " 1 catalogued, 0 broken"
    ) in summary_lines(summary)
    stored = json.loads((settings.path("qa", today.isoformat()) / "summary.json").read_text())
    assert stored["documents"][0]["catalogued"] == 1
    settings_mod.reset()
