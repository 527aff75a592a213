"""The launcher's schedule rule: which feed schedules fire in a given hour."""

from __future__ import annotations

import datetime as dt

import pytest

from harvest.continuous.launcher import crawl_scope, event_in_hour
from harvest.continuous.run import in_scope

START = "2026-01-31 09:15:00"  # a Saturday, the 31st


def fires(freq: str, when: str, start: str = START, end: str | None = None) -> bool:
    hour = dt.datetime.fromisoformat(when).replace(tzinfo=dt.UTC)
    sched = {"frequency": freq, "startDate": start, "endDate": end}
    return event_in_hour(sched, hour) is not None


@pytest.mark.parametrize(
    ("freq", "yes", "no"),
    [
        ("DAILY", "2026-03-04 09:00", "2026-03-04 10:00"),
        ("WEEKLY", "2026-02-07 09:00", "2026-02-06 09:00"),
        ("MONTHLY", "2026-03-31 09:00", "2026-03-30 09:00"),
        ("MONTHLY", "2026-02-28 09:00", "2026-02-27 09:00"),  # shorter month: its last day
        ("QUARTERLY", "2026-04-30 09:00", "2026-03-31 09:00"),
        ("SIXMONTHLY", "2026-07-31 09:00", "2026-04-30 09:00"),
        ("ANNUAL", "2027-01-31 09:00", "2026-12-31 09:00"),
    ],
)
def test_each_frequency_fires_on_its_day_at_the_start_hour(freq: str, yes: str, no: str) -> None:
    assert fires(freq, yes)
    assert not fires(freq, no)


def test_no_event_before_start_after_end_or_for_domain_crawls() -> None:
    assert not fires("DAILY", "2026-01-30 09:00")
    assert not fires("DAILY", "2026-02-10 09:00", end="2026-02-09 00:00:00")
    assert not fires("DOMAINCRAWL", "2026-02-10 09:00")
    event = event_in_hour(
        {"frequency": "daily", "startDate": START}, dt.datetime(2026, 2, 2, 9, 40, tzinfo=dt.UTC)
    )
    assert event == dt.datetime(2026, 2, 2, 9, 15, tzinfo=dt.UTC)


def test_feed_scope_words_map_to_crawl_scopes() -> None:
    assert crawl_scope("subdomains", "domain") == "domain"
    assert crawl_scope("root", "host") == "host"
    assert crawl_scope(None, "page") == "path"


def test_discovered_urls_stay_within_the_seeds_scope() -> None:
    assert in_scope("http://A.test/x", "http://a.test/", "host")
    assert not in_scope("http://www.a.test/x", "http://a.test/", "host")
    assert in_scope("http://www.a.test/x", "http://a.test/", "domain")
    assert not in_scope("http://b.test/x", "http://a.test/", "domain")
    assert in_scope("https://a.test/news/1", "http://a.test/news/", "path")
    assert in_scope("http://a.test/news/2026/1", "http://a.test/news/index.html", "path")
    assert not in_scope("http://a.test/sport/1", "http://a.test/news/", "path")
    assert not in_scope("http://b.test/news/1", "http://a.test/news/", "path")
    assert not in_scope("http://evil.test/x", "http://a.test", "path"), "a seed without a path"
    assert in_scope("http://a.test/anything", "http://a.test", "path")
    assert not in_scope("mailto:x@a.test", "http://a.test/", "host")
