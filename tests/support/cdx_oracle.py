"""The reference CDX lines of a WARC, by cdxj-indexer (the oracle) from its own virtualenv, and
the ``oracle`` fixture that gives that virtualenv (the conftests that need it import it)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
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


# cdxj-indexer's own command-line entry point (what its ``cdxj-indexer`` script calls), run once
# per requested format with that format's arguments, each to a file of its own
_MAIN_PER_FORMAT = """
import sys
from cdxj_indexer.main import main
out, fmts, inputs = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
for fmt in fmts:
    main((["-11"] if fmt == "cdx11" else []) + ["-o", f"{out}/{fmt}", *inputs])
"""


def reference_lines_by_format(
    oracle: Path, warcs: list[Path], fmts: tuple[str, ...]
) -> dict[str, list[str]]:
    """:func:`reference_lines` of ``warcs`` for each format of ``fmts``, from ONE oracle process.

    Why: each oracle process costs ~0.7 CPU-s of start-up (Python, warcio, the indexer) on a CI
    VM, and the chain's crash tests want both formats of the same files in each of their 18
    cases; the lines are the indexer's own, by its own entry point with the same arguments.
    """
    unknown = [f for f in fmts if f not in ("cdx11", "cdxj")]
    assert not unknown, unknown
    with tempfile.TemporaryDirectory(prefix="cdx-oracle-") as out:
        python = oracle / "bin" / "python"
        cmd = [str(python), "-c", _MAIN_PER_FORMAT, out, ",".join(fmts), *map(str, warcs)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        sys.stderr.write(done.stderr)
        return {fmt: Path(out, fmt).read_text().splitlines() for fmt in fmts}
