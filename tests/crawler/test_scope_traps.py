"""Crawler traps: endless calendars, session ids, repeated segments and deep paths are bounded,
and every blocked URL is in crawl.log with its reason."""

from __future__ import annotations

from tests.support.crawl import make_job, run_crawl


def test_trap_site_is_bounded_and_each_block_is_logged(site, tmp_path):
    template = {"max_calendar_pages": 5, "max_path_depth": 6, "max_repeated_path_segments": 2}
    job = make_job(
        site, [site.url("trap.example-c.test", "/")], template, crawler_traps=[r"/plain\.html$"]
    )
    result = run_crawl(job, tmp_path / "job", timeout=60)
    assert result.summary["status"] == "complete"
    fields = result.log_fields()
    reasons = {f[11] for f in fields if f[1] == "-4000"}
    assert {"trap:regex", "trap:path-depth", "trap:repeated-path-segments"} <= reasons
    assert reasons & {"trap:calendar-pages", "trap:calendar-future"}
    calendar = [f for f in fields if "/calendar/" in f[3] and f[1] == "200"]
    assert 1 <= len(calendar) <= 5 + 2  # the budget, plus the next-year pages before it filled
    # session ids: /shop?sid=0001 and /shop?sid=0002 are one URL for the seen-set
    shop = [f for f in fields if "/shop" in f[3]]
    assert len(shop) == 1
    assert not site.served("trap.example-c.test", "/plain.html")
    loops = [f for f in fields if "/loop/" in f[3] and f[1] == "200"]
    assert max(f[3].count("loop") for f in loops) == 2
