"""Fixtures of the indexing tests: the reference tools (oracles) and WARC files to index."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harvestflow.settings import PROJECT_ROOT
from tests.support.cdx_oracle import ORACLE_VENV


@pytest.fixture(scope="session")
def oracle() -> Path:
    """The oracle venv (pywb, cdxj-indexer, surt), created by scripts/setup-oracles.sh if needed."""
    if not (ORACLE_VENV / "bin" / "cdxj-indexer").exists():
        subprocess.run(["bash", str(PROJECT_ROOT / "scripts" / "setup-oracles.sh")], check=True)
    assert (ORACLE_VENV / "bin" / "cdxj-indexer").exists()
    return ORACLE_VENV
