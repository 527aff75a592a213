"""The reference CDX lines of a WARC, by cdxj-indexer (the oracle) from its own virtualenv, and
the ``oracle`` fixture that gives that virtualenv (the conftests that need it import it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harvestflow.settings import PROJECT_ROOT

ORACLE_VENV = PROJECT_ROOT / ".oracle-venv"


@pytest.fixture(scope="session")
def oracle() -> Path:
    """The oracle venv (pywb, cdxj-indexer, surt), created by scripts/setup-oracles.sh if needed."""
    if not (ORACLE_VENV / "bin" / "cdxj-indexer").exists():
        subprocess.run(["bash", str(PROJECT_ROOT / "scripts" / "setup-oracles.sh")], check=True)
    assert (ORACLE_VENV / "bin" / "cdxj-indexer").exists()
    return ORACLE_VENV


def reference_lines(oracle: Path, warc: Path | list[Path], fmt: str) -> list[str]:
    """cdxj-indexer's output for ``warc`` (``-11`` for CDX11), one string per line; for a list
    of files, each file's output in turn (one process, each file's header line included)."""
    cmd = [str(oracle / "bin" / "cdxj-indexer")]
    if fmt == "cdx11":
        cmd.append("-11")
    inputs = [str(w) for w in warc] if isinstance(warc, list) else [str(warc)]
    out = subprocess.run([*cmd, *inputs], check=True, capture_output=True, text=True)
    return out.stdout.splitlines()
