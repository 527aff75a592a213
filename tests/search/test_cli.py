"""``harvestflow search reindex`` and ``search query`` as an operator runs them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from harvestflow.settings import PROJECT_ROOT
from tests.support.corpus import chain_job, pages

pytestmark = pytest.mark.services


def _hf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PROJECT_ROOT / ".venv" / "bin" / "harvestflow"), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        cwd=PROJECT_ROOT,
        timeout=300,
    )


def test_reindex_then_query_prints_results_and_facets(
    db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    settings_mod.reset()
    items = pages()
    chain_job(db_engine, settings_mod.get_settings().data_dir, "cli", [items], revisit_of=items[5])
    first = _hf("search", "reindex")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == (
        "1 file(s): 6 documents extracted, 2 duplicate captures, 1 skipped, 0 failed"
    )
    again = _hf("search", "reindex", "--collection", "")
    assert again.stdout == first.stdout  # rebuilt from the WARCs, same index
    out = _hf("search", "query", "harvest calendar -zeppelinx")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "1 result(s); 1-1"
    assert "Harvest calendar" in lines
    assert "  2 other capture(s) of the same content" in lines
    assert any("[harvest] [calendar]" in line for line in lines)
    assert "host: mirror.example.net 1, news.example.org 1" in lines
    blocked = _hf(
        "search",
        "query",
        "calendar",
        "--block",
        "org,example,news)/",
        "--block",
        "net,example,mirror)/",
    )
    assert blocked.stdout.splitlines()[0] == "0 result(s); 0-0"
    settings_mod.reset()
