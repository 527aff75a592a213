"""The reference CDX lines of a WARC, by cdxj-indexer (the oracle) from its own virtualenv."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harvestflow.settings import PROJECT_ROOT

ORACLE_VENV = PROJECT_ROOT / ".oracle-venv"


def reference_lines(oracle: Path, warc: Path, fmt: str) -> list[str]:
    """cdxj-indexer's output for ``warc`` (``-11`` for CDX11), one string per line."""
    cmd = [str(oracle / "bin" / "cdxj-indexer")]
    if fmt == "cdx11":
        cmd.append("-11")
    out = subprocess.run([*cmd, str(warc)], check=True, capture_output=True, text=True)
    return out.stdout.splitlines()
