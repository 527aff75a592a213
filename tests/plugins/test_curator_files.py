"""Curator library without a database: crawl.log search filters and its refusal of bad
patterns, a pathological pattern answered in linear time, reports parsed into tables."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.curator.crawllog_search import CrawlLogSearchError, search_crawl_log
from app.curator.jobfiles import inside, parse_report, read_progress

LINES = [
    "2026-11-22T03:09:30.143Z   200   34 http://a.test/robots.txt P - text/plain #000 x sha1:A - -",
    "2026-11-22T03:09:30.180Z   200 2136 http://a.test/ - - text/html #000 x sha1:B http://a.test/ -",
    "2026-11-22T03:09:30.673Z   200   74 http://s.a.test/i.png E http://a.test/ image/png #000 x sha1:C - -",
    "2026-11-22T03:09:31.000Z   404   10 http://a.test/missing L http://a.test/ text/html #001 x sha1:D - -",
    "2026-11-22T03:09:32.000Z    -2    - http://b.test/ - - unknown #001 x - - -",
]


@pytest.fixture
def crawl_log(tmp_path: Path) -> Path:
    path = tmp_path / "crawl.log"
    path.write_text("\n".join(LINES) + "\n")
    return path


def test_search_filters_by_regex_status_and_mime(crawl_log: Path) -> None:
    assert [r[3] for r in search_crawl_log(crawl_log, r" http://a\.test/ - - ").lines] == [
        "http://a.test/"
    ]
    assert [r[1] for r in search_crawl_log(crawl_log, status="-2").lines] == ["-2"]
    assert [r[3] for r in search_crawl_log(crawl_log, mime="image/").lines] == [
        "http://s.a.test/i.png"
    ]
    both = search_crawl_log(crawl_log, "a.test", status="404", mime="text/html")
    assert [r[3] for r in both.lines] == ["http://a.test/missing"]


def test_search_pages_through_matches(crawl_log: Path) -> None:
    first = search_crawl_log(crawl_log, "a.test", limit=2)
    second = search_crawl_log(crawl_log, "a.test", offset=2, limit=2)
    assert first.more and len(first.lines) == 2
    assert [r[0] for r in second.lines] == [LINES[2].split()[0], LINES[3].split()[0]]


def test_bad_patterns_are_refused_with_a_reason(crawl_log: Path) -> None:
    with pytest.raises(CrawlLogSearchError, match="invalid regular expression"):
        search_crawl_log(crawl_log, "(unclosed")
    with pytest.raises(CrawlLogSearchError, match="longer than"):
        search_crawl_log(crawl_log, "a" * 1000)
    with pytest.raises(CrawlLogSearchError, match="integer"):
        search_crawl_log(crawl_log, status="abc")


def test_pathological_pattern_runs_in_linear_time(tmp_path: Path) -> None:
    # (a+)+b on a long line of a's backtracks exponentially in Python's re; RE2 does not
    path = tmp_path / "crawl.log"
    line = "2026-11-22T00:00:00Z 200 1 http://x/" + "a" * 5000 + " - - text/html #0 x - - -\n"
    path.write_text(line * 200)
    start = time.monotonic()
    result = search_crawl_log(path, "(a+)+b")
    assert result.lines == [] and result.scanned == 200
    assert time.monotonic() - start < 5


def test_reports_parse_into_tables() -> None:
    seeds = parse_report(
        "seeds-report",
        "[code] [status] [seed] [redirect]\n301 CRAWLED http://a.test/ http://www.a.test/\n",
    )
    assert seeds.columns == ["code", "status", "seed", "redirect"]
    assert seeds.rows == [["301", "CRAWLED", "http://a.test/", "http://www.a.test/"]]
    crawl = parse_report("crawl-report", "crawl name: job-2\nURIs processed: 47\n")
    assert crawl.rows == [["crawl name", "job-2"], ["URIs processed", "47"]]


def test_progress_log_and_path_safety(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "progress-statistics.log").write_text(
        "  timestamp discovered queued downloaded doc/s KB/s dl-failures\n"
        "2026-11-22T03:09:30Z 10 8 2 1.0(1.0) 2(1) 0 0 0 0 0 0 0\n"
        "2026-11-22T03:09:34Z 44 0 44 8.11(7.32) 2(1) 2 0 0 0 0 0 0\n"
        "2026-11-22T03:09:34Z CRAWL ENDED - Finished\n"
    )
    samples = read_progress(tmp_path)
    assert [s["downloaded"] for s in samples] == [2, 44]
    assert samples[-1]["ended"] == "CRAWL ENDED - Finished"
    with pytest.raises(ValueError):
        inside(tmp_path, "..", "etc", "passwd")
