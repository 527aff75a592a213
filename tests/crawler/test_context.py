"""The crawl's Scrapy components take the template from the settings and the job's shared
state from the crawler, and count in ``crawler.stats``.

Why: Scrapy deep-copies settings and expects plain values in them; a live object smuggled
through a setting (with a ``__deepcopy__`` returning itself) hid which component used what.
Each template value is now the setting ``HARVESTFLOW_<KEY>`` and the job's context hangs off
the crawler (``crawler.context.attach``).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector

from crawler import jobspec, runner
from crawler.context import FAILURES, URLS_DONE, CrawlContext, attach, context_of
from crawler.inflate import BoundedDecompressionMiddleware
from crawler.spider import ArchiveSpider


def _spec(tmp_path: Path) -> jobspec.JobSpec:
    job = {
        "job_id": 41,
        "seeds": ["http://a.example.test/"],
        "template": {"max_inflate_bytes": 5000, "inflate_budget_bytes": 9000, "extract_js": False},
        "resolve": {"a.example.test": "127.0.0.1"},
        "warc_prefix": "t",
        "user_agent": "hf-test/1.0 (+http://example.test/)",
    }
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job), encoding="utf-8")
    return jobspec.load(path)


def test_settings_are_plain_values_with_every_template_value(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    settings = runner.scrapy_settings(spec)
    json.dumps(settings)  # nothing but plain data: no live object in the settings
    s = Settings(settings).copy()  # Scrapy's own deep copy
    for key, value in asdict(spec.template).items():
        if key != "resolve":
            assert s.get(f"HARVESTFLOW_{key.upper()}") == value, key
    assert s.getint("HARVESTFLOW_MAX_INFLATE_BYTES") == 5000
    assert s.getbool("HARVESTFLOW_EXTRACT_JS") is False
    assert s.getdict("HARVESTFLOW_RESOLVE") == spec.all_resolve  # template's and job's
    assert s.getint("HARVESTFLOW_JOB_ID") == 41


def test_components_take_the_context_off_the_crawler(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    ctx = CrawlContext(spec, tmp_path / "out")
    try:
        crawler = Crawler(ArchiveSpider, runner.scrapy_settings(spec))
        with pytest.raises(RuntimeError, match="no harvestflow job context"):
            context_of(crawler)
        attach(crawler, ctx)
        # Scrapy copies the crawler's settings; the context is shared, never copied
        assert context_of(crawler) is ctx and copy.deepcopy(crawler.settings) is not None
        spider = ArchiveSpider.from_crawler(crawler)
        assert spider.ctx is ctx and spider.extract_js is False
        assert ctx.requests.callbacks == (spider.parse, spider.on_error)
        mw = BoundedDecompressionMiddleware.from_crawler(crawler)
        assert (mw.limit, mw.budget.total) == (5000, 9000)
        # counters go to crawler.stats
        crawler.stats = MemoryStatsCollector(crawler)
        ctx.count(URLS_DONE)
        ctx.count(URLS_DONE)
        ctx.count(FAILURES)
        assert crawler.stats.get_value(URLS_DONE) == 2
        assert crawler.stats.get_value(FAILURES) == 1
    finally:
        ctx.close_files()
        ctx.state.close()


class _Killed(BaseException):
    """Stands for a kill -9 at the point it is raised (nothing after it runs)."""


def _finish_one(
    ctx: CrawlContext, url: str, write_line: Callable[[str], None] | None = None
) -> str:
    """Mark ``url`` done and log it as the context does; ``write_line`` replaces the log's."""
    from crawler.crawllog_writer import LogEntry, format_line
    from crawler.state import FrontierState

    ctx.state.begin()
    ctx.state.add(url, url, "", None, url, "seed", "example.test")
    ctx.state.finish(url, FrontierState.DONE, 200, 10, True)
    when = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)  # the line's time, fixed
    entry = LogEntry(200, url, "", None, mime="text/html", size=10, seed=url, when=when)
    if write_line is not None:
        setattr(ctx.crawl_log, "write_line", write_line)  # noqa: B010 (an instance attribute)
    ctx.commit_logged(entry, ctx.state.commit)
    return format_line(entry)


def _reopen(ctx: CrawlContext, spec: jobspec.JobSpec, out: Path) -> list[str]:
    """The crawl.log lines after the job's context is closed and opened again (a resume)."""
    ctx.close_files()
    ctx.state.close()
    again = CrawlContext(spec, out)
    again.close_files()
    again.state.close()
    return (out / "logs" / "crawl.log").read_text(encoding="utf-8").splitlines()


def test_a_line_a_kill_cut_off_after_the_done_mark_is_written_on_resume(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path), tmp_path / "out"
    ctx = CrawlContext(spec, out)
    first = _finish_one(ctx, "http://a.example.test/1")

    def killed(line: str) -> None:
        raise _Killed

    with pytest.raises(_Killed):
        _finish_one(ctx, "http://a.example.test/2", killed)
    assert "a.example.test/2" not in (out / "logs" / "crawl.log").read_text()
    lines = _reopen(ctx, spec, out)
    assert [first] == lines[:1] and len(lines) == 2 and " http://a.example.test/2 " in lines[1]


def test_a_line_torn_by_a_kill_is_written_whole_on_resume(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path), tmp_path / "out"
    ctx = CrawlContext(spec, out)
    log_file = ctx.crawl_log

    def torn(line: str) -> None:
        log_file._fh.write(line.encode()[:20])
        raise _Killed

    with pytest.raises(_Killed):
        _finish_one(ctx, "http://a.example.test/2", torn)
    lines = _reopen(ctx, spec, out)
    assert len(lines) == 1 and " http://a.example.test/2 " in lines[0]


def test_a_line_written_before_a_kill_is_not_written_again(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path), tmp_path / "out"
    ctx = CrawlContext(spec, out)
    lines_written = [_finish_one(ctx, f"http://a.example.test/{i}") for i in range(3)]
    ctx.crawl_log.write_line("an unrelated line after the last done mark")
    lines = _reopen(ctx, spec, out)
    assert lines == [*lines_written, "an unrelated line after the last done mark"]


def _refuse_link(ctx: CrawlContext, url: str) -> str:
    """A page's link refused as the frontier refuses one (its crawl.log line), in the page's
    transaction, opened with the log held as finish_capture does before considering links."""
    from crawler.crawllog_writer import LogEntry, format_line

    ctx.state.begin()
    ctx.crawl_log.hold()
    when = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)
    entry = LogEntry(-5003, url, "L", "http://a.example.test/p", seed="x", when=when)
    ctx.crawl_log.write(entry)
    return format_line(entry)


def test_a_pages_refusal_lines_are_not_written_twice_after_a_kill_before_its_done_mark(
    tmp_path: Path,
) -> None:
    spec, out = _spec(tmp_path), tmp_path / "out"
    ctx = CrawlContext(spec, out)
    _refuse_link(ctx, "http://b.example.test/over-quota")
    ctx.crawl_log._fh.close()  # killed before the page's commit: nothing else runs
    ctx.state.close()
    assert "over-quota" not in (out / "logs" / "crawl.log").read_text()
    again = CrawlContext(spec, out)  # the resumed crawl parses the page again
    refusal = _refuse_link(again, "http://b.example.test/over-quota")
    page = _finish_one(again, "http://a.example.test/p")
    lines = _reopen(again, spec, out)
    assert lines == [refusal, page]


def test_a_pages_lines_cut_off_after_its_done_mark_are_all_written_on_resume(
    tmp_path: Path,
) -> None:
    spec, out = _spec(tmp_path), tmp_path / "out"
    ctx = CrawlContext(spec, out)
    refusal = _refuse_link(ctx, "http://b.example.test/over-quota")

    def killed(line: str) -> None:
        raise _Killed

    with pytest.raises(_Killed):
        _finish_one(ctx, "http://a.example.test/p", killed)
    assert (out / "logs" / "crawl.log").read_text() == ""
    lines = _reopen(ctx, spec, out)
    assert lines[0] == refusal and len(lines) == 2 and " http://a.example.test/p " in lines[1]


def test_a_first_part_of_a_pages_lines_written_before_a_kill_is_completed_on_resume(
    tmp_path: Path,
) -> None:
    spec, out = _spec(tmp_path), tmp_path / "out"
    ctx = CrawlContext(spec, out)
    log_file = ctx.crawl_log
    refusal = _refuse_link(ctx, "http://b.example.test/over-quota")

    def torn(lines: str) -> None:  # the refusal and a piece of the page's line, then the kill
        log_file._fh.write(lines.encode()[: len(refusal) + 15])
        raise _Killed

    with pytest.raises(_Killed):
        _finish_one(ctx, "http://a.example.test/p", torn)
    lines = _reopen(ctx, spec, out)
    assert lines[0] == refusal and len(lines) == 2 and " http://a.example.test/p " in lines[1]
