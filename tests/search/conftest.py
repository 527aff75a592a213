"""Fixtures of the search tests: the crafted corpus through the chain and its text module."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from indexing.fulltext import extract_file, pending_files
from search.backends import get_backend
from tests.support.corpus import chain_job, pages


@pytest.fixture
def indexed(db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    settings_mod.reset()
    cfg = settings_mod.get_settings()
    items = pages()
    names = chain_job(
        db_engine, cfg.data_dir, "fulltext", [items[:5], items[5:]], revisit_of=items[5]
    )
    assert sorted(pending_files()) == sorted(names)
    results = [extract_file(n) for n in names]
    assert pending_files() == []
    yield get_backend(), results
    settings_mod.reset()
