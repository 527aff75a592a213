"""The daily QA reports the day's full-text extraction: documents extracted, skipped, failed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from indexing.fulltext import FileMeta, extract_warc
from qa.daily import run_daily, summary_lines
from search.backends import get_backend
from tests.support.corpus import pages, write_pages

pytestmark = pytest.mark.services


def test_daily_qa_counts_extracted_skipped_and_failed_documents(
    db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    settings_mod.reset()
    settings = settings_mod.get_settings()
    items = pages()
    backend = get_backend(settings)
    for name, part, cut in (("a.warc.gz", items[:5], False), ("b.warc.gz", items[5:], True)):
        extract_warc(write_pages(tmp_path / name, part, cut_last=cut), FileMeta(name), backend)
    today = datetime.now(UTC).date()
    summary = run_daily(today, settings, engine=db_engine)
    # a: 5 texts; b: calendar text, its mirror a duplicate, the 404 skipped, the image cut
    assert summary["fulltext"] == {
        "files": 2,
        "extracted": 6,
        "duplicates": 1,
        "skipped": 1,
        "failed": 1,
    }
    assert (
        "  full text: 6 documents extracted from 2 WARC(s), 1 duplicate captures, 1 skipped,"
        " 1 failed"
    ) in summary_lines(summary)
    stored = json.loads((settings.path("qa", today.isoformat()) / "summary.json").read_text())
    assert stored["fulltext"]["failed"] == 1
    settings_mod.reset()
