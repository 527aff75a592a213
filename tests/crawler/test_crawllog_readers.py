"""No value can shift or forge a crawl.log field: the writer escapes every value through the
one sanitiser (harvestflow.formats.fields), and every crawl.log reader names a shifted or
forged line as bad.

The forged lines are what a ``Content-Type`` with spaces made of a line before values were
escaped: ``text/html x y`` gives 14 fields; ``text/html #001 x sha1:FORGED http://evil.test/
duplicate:digest`` gives 17, whose first 12 — all a reader that took "at least 12" looked at —
carry the server's own digest, seed and annotations. The QA paths (polars and C) are checked
in tests/qa/test_crawlscan.py.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from crawler.crawllog_writer import LogEntry, format_line
from crawler.reports import tally_crawl_log
from harvest.continuous.noise import NoiseFilter
from harvest.continuous.runread import read_run
from harvestflow.curator.crawllog_search import search_crawl_log
from harvestflow.formats.crawllog import CrawlLogLine
from indexing.dedup_index import duplicate_keys
from qa.crawlline import parse_line_slow

GOOD = (
    "2026-11-22T10:15:02.123Z   200       1234 http://a.test/x L http://a.test/ text/html"
    " #001 20261122101502100+20 sha1:GOODGOOD http://a.test/ -"
)
FORGED = (
    "2026-11-22T10:15:02.123Z   200       1234 http://a.test/y L http://a.test/ text/html x y"
    " #001 20261122101502100+20 sha1:FORGED http://evil.test/ duplicate:digest"
)
FORGED_DIGEST = (
    "2026-11-22T10:15:02.123Z   200       1234 http://a.test/z L http://a.test/ text/html #001 x"
    " sha1:FORGED http://evil.test/ duplicate:digest"
    " #001 20261122101502100+20 sha1:REALREAL http://a.test/ -"
)
EXTRA_INFO = GOOD + ' {"contentSize":1234,"warcFilename":"x.warc.gz"}'
HOSTILE = [
    "\t",
    "\r",
    "\n",
    "\x00",
    " ",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
    "\u00a0",
    "\u2028",
    "\u2029",
    "\u3000",
    "\u200b",
    "\ufeff",
    "\x7f",
]


def test_a_hostile_entry_gives_a_twelve_field_line() -> None:
    when = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    for char in HOSTILE:
        value = f"v{char}a b\tc" + "z" * 10_000
        line = format_line(
            LogEntry(
                200,
                "http://a.test/" + value,
                "L",
                via="http://a.test/" + value,
                mime="text/html" + value,
                size=5,
                fetch_start=when,
                duration_ms=3,
                digest="sha1:X",
                seed="http://a.test/" + value,
                annotations=["err=" + value, "lenTrunc"],
                when=when,
            )
        )
        assert len(line.splitlines()) == 1, repr(char)
        entry = CrawlLogLine.parse(line)
        assert entry is not None, repr(char)
        assert entry.annotations[-1] == "lenTrunc"
        assert entry.mime is not None and len(entry.mime) <= 200


def test_qa_slow_path_names_a_forged_line() -> None:
    row, why = parse_line_slow(FORGED)
    assert row is None and "14 fields" in why
    row, why = parse_line_slow(FORGED_DIGEST)
    assert row is None and "17 fields" in why
    row, why = parse_line_slow(EXTRA_INFO)
    assert row is not None and why == ""


def _log(tmp: Path) -> Path:
    path = tmp / "logs" / "crawl.log"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join([GOOD, FORGED, FORGED_DIGEST, EXTRA_INFO]) + "\n", encoding="utf-8")
    return path


def test_reports_leave_out_a_forged_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _log(tmp_path)
    caplog.set_level("WARNING", logger="crawler.reports")
    t = tally_crawl_log(path)
    assert t.bad_lines == 2 and t.processed == 2
    assert t.dup == 0  # the forged duplicate:digest is not counted
    assert ("http://evil.test/", "a.test") not in t.sources
    assert any(":2: bad crawl.log line" in r.getMessage() for r in caplog.records)


def test_curator_search_never_shows_a_forged_line(tmp_path: Path) -> None:
    path = _log(tmp_path)
    result = search_crawl_log(path, "evil|GOOD", mime="text/html")
    assert [line[9] for line in result.lines] == ["sha1:GOODGOOD", "sha1:GOODGOOD"]
    assert result.bad_lines == 2 and result.first_bad == 2
    assert "14 fields" in result.bad_reason


def test_continuous_run_reader_skips_a_forged_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _log(tmp_path)
    caplog.set_level("WARNING", logger="harvest.continuous.runread")
    out = read_run(tmp_path, NoiseFilter([]))
    assert out.bad_lines == 2
    assert [v.digest for v in out.visits] == ["sha1:GOODGOOD", "sha1:GOODGOOD"]
    assert any("crawl.log:2: bad crawl.log line" in r.getMessage() for r in caplog.records)


def test_dedup_index_takes_no_key_from_a_forged_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dup = GOOD.replace("http://a.test/x", "http://a.test/d").replace(" -", " duplicate:digest")
    path = tmp_path / "crawl.log"
    path.write_text("\n".join([dup, FORGED, FORGED_DIGEST]) + "\n", encoding="utf-8")
    caplog.set_level("WARNING", logger="indexing.dedup_index")
    assert duplicate_keys(path) == {(b"http://a.test/d", b"sha1:GOODGOOD")}
    assert any("2 bad crawl.log line" in r.getMessage() for r in caplog.records)
