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
import re
from pathlib import Path

import pytest

from app.curator.crawllog_search import search_crawl_log
from crawler.crawllog_writer import LogEntry, format_line
from crawler.reports import tally_crawl_log
from harvest.continuous.noise import NoiseFilter
from harvest.continuous.runread import read_run
from harvestflow.formats.crawllog import CrawlLogLine
from qa.crawlline import parse_line_slow
from tests.support.crawllog_samples import (
    EXTRA_INFO,
    FORGED,
    FORGED_DIGEST,
    GOOD,
    HOSTILE_CHARS,
    HOSTILE_LINES,
    SAMPLES,
)


def test_a_hostile_entry_gives_a_twelve_field_line() -> None:
    when = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    for char in HOSTILE_CHARS:
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


def _search_corpus(tmp: Path) -> tuple[Path, list[str]]:
    """Heritrix's own lines, every hostile line of the format tests, and this file's forged
    ones, interleaved, with a few lines of odd spacing and Heritrix's negative codes."""
    lines = list(SAMPLES.read_text(encoding="utf-8").splitlines())
    lines += [line for _, line in HOSTILE_LINES]
    lines += [GOOD, FORGED, FORGED_DIGEST, EXTRA_INFO]
    lines += [
        "2026-11-22T10:15:02.123Z\t-6\t-  dns:a.test P http://a.test/ unknown #003 - - - -",
        "2026-11-22T10:15:02.123Z  +404        -  http://a.test/m - - text/html #003 - - - -",
        "2026-11-22T10:15:02.123Z   404       1_0 http://a.test/n - - image/png #003 - - - -",
        "2026-11-22T10:15:02.123Z -9998          - http://a.test/robots.txt P - - #001 - - - -",
    ]
    lines = lines[1::2] + lines[::2]
    path = tmp / "crawl.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lines


@pytest.mark.parametrize(
    "filters",
    [{}, {"status": "404"}, {"status": "-6"}, {"mime": "text/html"}, {"mime": "image/"},
     {"pattern": "a\\.test/[a-z]"}, {"pattern": "evil|GOOD", "status": "200", "mime": "text/html"}],
)  # fmt: skip
def test_curator_search_reads_lines_as_the_one_parser_does(
    tmp_path: Path, filters: dict[str, str]
) -> None:
    """The search checks every line without building it: what it shows, refuses and names
    must be exactly what CrawlLogLine.read gives for the same lines."""
    path, lines = _search_corpus(tmp_path)
    read = [CrawlLogLine.read(line) for line in lines]
    refused = [(n, why) for n, (entry, why) in enumerate(read, 1) if entry is None]
    status = int(filters["status"]) if "status" in filters else None
    mime = filters.get("mime", "")
    pattern = re.compile(filters.get("pattern", ""))
    shown = [
        entry.fields()
        for line, (entry, _) in zip(lines, read, strict=True)
        if entry is not None
        and (status is None or entry.status == status)
        and (not mime or ((entry.mime or "-").startswith(mime) if mime.endswith("/")
                          else (entry.mime or "-") == mime))
        and pattern.search(line)
    ]  # fmt: skip
    result = search_crawl_log(
        path, filters.get("pattern", ""), filters.get("status", ""), filters.get("mime", "")
    )
    assert shown, "the corpus has lines for every filter"
    assert result.lines == shown
    assert result.bad_lines == len(refused) > 5
    assert (result.first_bad, result.bad_reason) == refused[0]


def test_curator_search_builds_only_the_lines_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building a CrawlLogLine for every line of a log of millions was most of a search's
    time; the checks run on every line, the model is built for the page shown."""
    path, lines = _search_corpus(tmp_path)
    built = []
    real_read = CrawlLogLine.read

    def counting_read(line: str) -> tuple[CrawlLogLine | None, str]:
        built.append(line)
        return real_read(line)

    monkeypatch.setattr(CrawlLogLine, "read", staticmethod(counting_read))
    result = search_crawl_log(path, status="404")
    assert 0 < len(result.lines) < len(lines) // 4 and result.scanned == len(lines)
    assert len(built) == len(result.lines), f"{len(built)} lines built for {len(result.lines)}"
