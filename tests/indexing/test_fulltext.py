"""The text-extraction module of the chain: damaged records named, restarts without duplicates.

A WARC with a record cut in the middle of the file and one cut at its end: both are named with
their offsets and every other document is indexed. Killed at each named crash point, and by a
real SIGKILL of a subprocess in the middle of a file, a rerun finishes with every document and
capture exactly once and the same counts as an uninterrupted run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from harvestflow import settings as settings_mod
from harvestflow.settings import PROJECT_ROOT
from indexing.crashpoints import ENV, EXIT_CODE
from indexing.fulltext import FileMeta, extract_warc
from search.backends import get_backend
from search.query import parse_query
from tests.support.corpus import Page, chain_job, pages, write_pages

pytestmark = pytest.mark.services


def _members(path: Path) -> list[int]:
    """Offsets of the gzip members (records) of a warcio-written file."""
    data = path.read_bytes()
    offsets, pos = [], 0
    while (pos := data.find(b"\x1f\x8b\x08", pos)) >= 0:
        offsets.append(pos)
        pos += 1
    return offsets


def test_damaged_records_are_named_and_the_rest_indexed(
    db_engine: sa.Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    items = pages()
    warc = write_pages(tmp_path / "d.warc.gz", items[:6], cut_last=True)
    data = warc.read_bytes()
    starts = _members(warc)
    # cut the third page's record (the latin-1 page) in half, in the middle of the file
    third = starts[3]
    damaged = data[:third] + data[third : third + (starts[4] - third) // 2] + data[starts[4] :]
    warc.write_bytes(damaged)
    backend = get_backend()
    state = extract_warc(warc, FileMeta(warc.name), backend)
    offsets = [e["offset"] for e in state.errors]
    assert offsets == [third, _members(warc)[-1]], state.errors
    assert state.failed == 2
    assert state.extracted == 4  # fr, en, boilerplate-only page, PDF; the calendar was cut
    assert f"damaged record at offset {third} skipped" in caplog.text
    found = backend.search(parse_query("dirigible OR quetzalcoatl OR salles OR harvests"))
    assert sorted(h.url for h in found.hits) == sorted(
        [items[0].url, items[1].url, items[3].url, items[4].url]
    )
    assert backend.search(parse_query("sèvres")).total == 0


def _big_file(tmp_path: Path, n: int = 120) -> tuple[Path, list[Page]]:
    base = pages()
    items = [
        Page(
            f"http://site{i % 7}.example.org/p{i}",
            (
                f"<html lang='en'><title>Page {i}</title><p>Unique word w{i}x and the shared"
                f" story of item number {i} in the kill test corpus.</p></html>"
            ).encode(),
            "text/html",
        )
        for i in range(n)
    ]
    items += base[:5]
    items.append(Page("http://copy.example.org/again", base[0].body, base[0].content_type))
    return write_pages(tmp_path / "big.warc.gz", items), items


def _state(engine: sa.Engine) -> tuple[int, int, list[tuple[str, int]]]:
    with engine.connect() as conn:
        docs = conn.execute(sa.text("SELECT count(*) FROM fulltext_docs")).scalar_one()
        caps = conn.execute(sa.text("SELECT count(*) FROM fulltext_captures")).scalar_one()
        dup = conn.execute(
            sa.text("SELECT url, count(*) FROM fulltext_captures GROUP BY url HAVING count(*) > 1")
        ).all()
    return int(docs), int(caps), [tuple(r) for r in dup]


_CHILD = """
import logging
import sys
logging.basicConfig(level=logging.INFO)
from pathlib import Path
from indexing.fulltext import FileMeta, extract_warc
from search.backends import get_backend
state = extract_warc(Path(sys.argv[1]), FileMeta(Path(sys.argv[1]).name), get_backend())
print(state.extracted, state.duplicates, state.skipped, state.failed)
"""


def _child(warc: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(warc)],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(ENV, None)
    env["HARVESTFLOW_FULLTEXT__BATCH_RECORDS"] = "10"
    env.update(extra)
    return env


@pytest.mark.parametrize("point", ["fulltext.batch_written", "fulltext.done_recorded"])
def test_crash_at_each_point_then_rerun_writes_each_document_once(
    point: str, db_engine: sa.Engine, tmp_path: Path
) -> None:
    warc, _ = _big_file(tmp_path)
    crashed = _child(warc, _env(**{ENV: point}))
    crashed.communicate(timeout=300)
    assert crashed.returncode == EXIT_CODE, f"crash point {point} was never reached"
    rerun = _child(warc, _env())
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert out.split() == ["125", "1", "0", "0"]
    assert _state(db_engine) == (125, 126, [])


def test_sigkill_in_the_middle_of_extraction_resumes_without_duplicates(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    warc, _ = _big_file(tmp_path, n=600)
    child = _child(warc, _env())
    deadline = time.monotonic() + 300
    resumed_from = -1
    while time.monotonic() < deadline and child.poll() is None:
        with db_engine.connect() as conn:
            row = conn.execute(
                sa.text("SELECT next_offset, status FROM fulltext_files WHERE file_name = :f"),
                {"f": warc.name},
            ).first()
        if row is not None and row[0] > 0 and row[1] == "running":
            resumed_from = int(row[0])
            break
        time.sleep(0.05)
    assert child.poll() is None, "extraction finished before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    partial = _state(db_engine)
    assert 0 < partial[1] < 606 and resumed_from > 0
    rerun = _child(warc, _env())
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert "resuming after the record at offset" in err
    assert out.split() == ["605", "1", "0", "0"]
    assert _state(db_engine) == (605, 606, [])
    hit = get_backend().search(parse_query('"unique word w599x"'))
    assert [h.url for h in hit.hits] == ["http://site4.example.org/p599"]


def test_chain_files_are_extracted_once_and_quarantined_ones_never(
    db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files past the index module are pending until extracted; a quarantined file never is
    (replay cannot show its captures either)."""
    from indexing.fulltext import extract_file, pending_files

    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    settings_mod.reset()
    cfg = settings_mod.get_settings()
    items = pages()
    good, cut = chain_job(db_engine, cfg.data_dir, "q", [items[:2], items[2:4]], cut=(1,))
    with db_engine.connect() as conn:
        stages = dict(conn.execute(sa.text("SELECT file_name, stage FROM index_manifest")).all())
    assert stages == {good: "done", cut: "quarantined"}
    assert pending_files() == [good]
    assert extract_file(cut)["status"] == "quarantined"
    assert extract_file(good)["extracted"] == 2
    assert pending_files() == []
    assert extract_file(good)["extracted"] == 2  # a finished file is left as it is
    assert get_backend().count() == (2, 2)
    settings_mod.reset()


class _CountingBackend:
    """The real backend, counting the digest look-ups the extraction asks of it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.asked: list[int] = []

    def known_digests(self, digests: list[str]) -> set[str]:
        self.asked.append(len(digests))
        return set(self.inner.known_digests(digests))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_digests_are_looked_up_once_per_batch_not_per_record(
    db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_FULLTEXT__BATCH_RECORDS", "50")
    settings_mod.reset()
    try:
        warc, _ = _big_file(tmp_path)
        with open(warc, "rb") as fh:
            records = sum(1 for _ in ArchiveIterator(fh))
        batches = -(-records // 50)
        first = _CountingBackend(get_backend())
        state = extract_warc(warc, FileMeta(warc.name), first)
        assert (state.extracted, state.duplicates) == (125, 1)
        assert len(first.asked) <= batches, first.asked
        # the same payloads in another file: every one found known, in as few look-ups
        again = tmp_path / "again.warc.gz"
        again.write_bytes(warc.read_bytes())
        second = _CountingBackend(get_backend())
        state = extract_warc(again, FileMeta(again.name), second)
        assert (state.extracted, state.duplicates) == (0, 126)
        assert len(second.asked) <= batches, second.asked
        assert _state(db_engine)[:2] == (125, 252)
    finally:
        settings_mod.reset()


_MEMORY_CHILD = """
import sys
from pathlib import Path
from indexing.fulltext import FileMeta, extract_warc

class Memory:
    docs: list = []
    def progress(self, name): return None
    def known_digests(self, digests): return set()
    def add(self, docs, caps, state): self.docs += docs

extract_warc(Path(sys.argv[1]), FileMeta(Path(sys.argv[1]).name), Memory())
print(len(Memory.docs), sorted(m for m in ("sqlalchemy", "psycopg") if m in sys.modules))
"""


def test_extraction_into_a_given_backend_does_not_load_the_database_layer(tmp_path: Path) -> None:
    """A process that only extracts (handed its backend) never imports SQLAlchemy: the chain's
    entry points load the manifest and the configured backend themselves."""
    warc = write_pages(tmp_path / "p.warc.gz", pages())
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, str(warc)],
        env=_env(),
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6", "[]"], out.stdout + out.stderr
