"""The reference CDX lines of a WARC, by cdxj-indexer (the oracle) from its own virtualenv, and
the ``oracle`` fixture that gives that virtualenv (the conftests that need it import it)."""

from __future__ import annotations

import atexit
import json
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


# cdxj-indexer's own command-line entry point (what its ``cdxj-indexer`` script calls), kept
# running: for each request line (JSON: output folder, formats, inputs) it is called once per
# format with that format's arguments, each to a file of its own, then "done" is answered
_SERVE_MAIN = """
import json, sys
from cdxj_indexer.main import main
for line in sys.stdin:
    out, fmts, inputs = json.loads(line)
    for fmt in fmts:
        main((["-11"] if fmt == "cdx11" else []) + ["-o", f"{out}/{fmt}", *inputs])
    print("done", flush=True)
"""


class _OracleProcess:
    """One running oracle process of a virtualenv, answering requests one at a time."""

    def __init__(self, oracle: Path) -> None:
        # the process's error output, read after each request (closed with the process)
        self.errors = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [str(oracle / "bin" / "python"), "-c", _SERVE_MAIN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
        )

    def run(self, out: str, fmts: tuple[str, ...], warcs: list[Path]) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([out, list(fmts), list(map(str, warcs))]) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        self.errors.seek(0)
        said = self.errors.read()
        self.errors.seek(0)
        self.errors.truncate()
        assert answer == "done\n", said[-2000:]
        sys.stderr.write(said)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.errors.close()


_running: dict[Path, _OracleProcess] = {}


def _oracle_process(oracle: Path) -> _OracleProcess:
    """The oracle process of ``oracle``, started at the first request of this test process and
    ended with it; a new one if the last has died."""
    found = _running.get(oracle)
    if found is None or found.proc.poll() is not None:
        if found is None and not _running:
            atexit.register(_close_all)
        found = _running[oracle] = _OracleProcess(oracle)
    return found


def _close_all() -> None:
    for running in _running.values():
        running.close()
    _running.clear()


def reference_lines_by_format(
    oracle: Path, warcs: list[Path], fmts: tuple[str, ...]
) -> dict[str, list[str]]:
    """:func:`reference_lines` of ``warcs`` for each format of ``fmts``, from ONE oracle process
    kept for the test process's later requests.

    Why: each oracle process costs ~0.7 CPU-s of start-up (Python, warcio, the indexer) on a CI
    VM, and the chain's crash tests want both formats of other files in each of their 19
    cases; the lines are the indexer's own, by its own entry point with the same arguments
    (a call keeps no state for the next: it parses its arguments, opens its output and closes
    it).
    """
    unknown = [f for f in fmts if f not in ("cdx11", "cdxj")]
    assert not unknown, unknown
    with tempfile.TemporaryDirectory(prefix="cdx-oracle-") as out:
        _oracle_process(oracle).run(out, fmts, warcs)
        return {fmt: Path(out, fmt).read_text().splitlines() for fmt in fmts}
