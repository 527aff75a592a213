"""The URL state's due order and quotas, per-template and per-host policies, launch details."""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest
import sqlalchemy as sa

from harvest.continuous.launcher import launch_hour
from harvest.continuous.policy import HOUR, RevisitPolicy, template_policies
from harvest.continuous.store import (
    PolicyBook,
    due_states,
    host_overrides,
    save_states,
    seed_settings,
    set_host_policy,
)
from harvest.continuous.urlstate import new_state

NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


def _states(engine: sa.Engine, rows: list[tuple[str, str, int]]) -> None:
    """(url, seed, minutes from NOW to next due) rows into continuous_url_state."""
    p = RevisitPolicy()
    states = []
    for url, seed, minutes in rows:
        s = new_state(url, url.split("/")[2], seed, 1, NOW, p)
        s.next_due = NOW + dt.timedelta(minutes=minutes)
        states.append(s)
    with engine.begin() as conn:
        save_states(conn, states)


def test_due_urls_come_oldest_first_and_a_used_up_seed_quota_holds_its_urls(
    db_engine: sa.Engine,
) -> None:
    _states(
        db_engine,
        [
            ("http://a.test/1", "http://a.test/", -10),
            ("http://a.test/2", "http://a.test/", -300),
            ("http://b.test/1", "http://b.test/", -60),
            ("http://b.test/2", "http://b.test/", 5),  # not due yet
            ("http://c.test/1", "http://c.test/", -120),
        ],
    )
    urls = [s.url for s in due_states(db_engine, NOW, 10)]
    assert urls == ["http://a.test/2", "http://c.test/1", "http://b.test/1", "http://a.test/1"]
    assert [s.url for s in due_states(db_engine, NOW, 2)] == urls[:2], "a batch takes the oldest"
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO continuous_seeds (seed_url, max_urls_per_launch,"
                " fetched_since_launch) VALUES ('http://c.test/', 3, 3), ('http://a.test/', 3, 2)"
            )
        )
    # c.test's quota is used up; a.test has one fetch left: its oldest due URL only
    urls = [s.url for s in due_states(db_engine, NOW, 10)]
    assert urls == ["http://a.test/2", "http://b.test/1"]


def test_a_url_gets_its_templates_policy_then_its_hosts_overrides(
    db_engine: sa.Engine, caplog: pytest.LogCaptureFixture
) -> None:
    conf = {
        "min_wait_s": 600.0,
        "news": {"max_wait_s": 2 * HOUR, "initial_wait_s": {"html": 1800.0}},
    }
    templates = template_policies(conf)
    assert set(templates) == {"news"} and templates["news"].min_wait_s == 600.0
    set_host_policy(db_engine, "Fast.test", {"max_wait_s": 900.0})
    with pytest.raises(ValueError, match="max_wiat_s"):
        set_host_policy(db_engine, "typo.test", {"max_wiat_s": 1})
    with db_engine.begin() as conn:  # a row written behind the CLI's back
        conn.execute(
            sa.text(
                "INSERT INTO continuous_host_policy (host, overrides)"
                " VALUES ('bad.test', CAST(:o AS jsonb))"
            ),
            {"o": json.dumps({"no_such_key": 1})},
        )
    overrides = host_overrides(db_engine)
    assert overrides["fast.test"] == {"max_wait_s": 900.0}
    book = PolicyBook(RevisitPolicy(), overrides, templates)
    news = book.for_host("other.test", "news")
    assert (news.max_wait_s, news.initial_wait("text/html", 0)) == (2 * HOUR, 1800.0)
    assert book.for_host("other.test", "unknown") == RevisitPolicy()
    assert book.for_host("other.test") == RevisitPolicy()
    fast_news = book.for_host("fast.test", "news")
    assert fast_news.max_wait_s == 900.0 and fast_news.initial_wait_s["html"] == 1800.0
    assert book.for_host("fast.test").max_wait_s == 900.0
    caplog.set_level(logging.ERROR, logger="harvest.continuous")
    assert book.for_host("bad.test", "news") == templates["news"]
    assert "bad.test ignored" in caplog.text


def test_launch_records_the_frequency_that_fired_and_the_seeds_template(
    db_engine: sa.Engine,
) -> None:
    schedules = [  # the daily schedule fires at 06:00, the quarterly one at 09:00
        {"frequency": "DAILY", "startDate": "2026-11-01 06:00:00", "endDate": None},
        {"frequency": "QUARTERLY", "startDate": "2026-08-22 09:30:00", "endDate": None},
    ]
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO selection_records (collection, seed_url, supplementary_urls, budget,"
                " frequency, depth, scope, schedules, theme) VALUES ('news', 'http://q.test/',"
                " ARRAY['http://q.test/extra'], 'small', 'quarterly', 'one_click', 'subdomains',"
                " CAST(:sch AS jsonb), 'news')"
            ),
            {"sch": json.dumps(schedules)},
        )
    depths = {"one_click": "news"}
    nine = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
    result = launch_hour(db_engine, nine, depth_templates=depths)
    assert result.injected == ["http://q.test/", "http://q.test/extra"]
    assert launch_hour(db_engine, nine, depth_templates=depths).injected == []
    assert launch_hour(db_engine, nine.replace(hour=6)).injected == [
        "http://q.test/",
        "http://q.test/extra",
    ]
    with db_engine.connect() as conn:
        launches = conn.execute(
            sa.text(
                "SELECT extract(hour FROM launch_hour) AS h, frequency FROM continuous_launches"
                " GROUP BY 1, 2 ORDER BY 1"
            )
        ).all()
    assert [(int(r.h), r.frequency) for r in launches] == [(6, "DAILY"), (9, "QUARTERLY")]
    # the 06:00 launch had no depth mapping: the default template
    assert seed_settings(db_engine)["http://q.test/"] == ("domain", "continuous")
    launch_hour(db_engine, nine + dt.timedelta(days=92), depth_templates=depths)
    assert seed_settings(db_engine)["http://q.test/extra"] == ("domain", "news")
    # never visited: a later launch keeps it due at its earliest event (it is only later due)
    due = {s.url: s.next_due for s in due_states(db_engine, nine + dt.timedelta(days=93), 10)}
    assert due["http://q.test/"] == nine.replace(hour=6)


def test_urls_of_a_withdrawn_target_are_neither_due_nor_overdue(db_engine: sa.Engine) -> None:
    from harvest.continuous.report import crawl_stats, host_report

    with db_engine.begin() as conn:
        record_id = conn.execute(
            sa.text(
                "INSERT INTO selection_records (collection, seed_url, budget, frequency, depth,"
                " scope, schedules, theme) VALUES ('news', 'http://w.test/', 'small', 'daily',"
                " 'host', 'root', '[]', 'news') RETURNING record_id"
            )
        ).scalar_one()
        conn.execute(
            sa.text("INSERT INTO continuous_seeds (seed_url, record_id) VALUES (:s, :r)"),
            {"s": "http://w.test/", "r": record_id},
        )
    _states(
        db_engine,
        [("http://w.test/1", "http://w.test/", -120), ("http://k.test/1", "http://k.test/", -120)],
    )
    assert len(due_states(db_engine, NOW, 10)) == 2
    with db_engine.begin() as conn:
        conn.execute(sa.text("UPDATE selection_records SET active = false"))
    assert [s.url for s in due_states(db_engine, NOW, 10)] == ["http://k.test/1"]
    stats = crawl_stats(db_engine, NOW)
    assert (stats.urls, stats.due, stats.overdue) == (2, 1, 1), "history kept, not due"
    rows = {r["host"]: r for r in host_report(db_engine, NOW)}
    assert (rows["w.test"]["urls"], rows["w.test"]["backlog"], rows["w.test"]["overdue"]) == (
        1,
        0,
        0,
    )
    with db_engine.begin() as conn:  # the curator re-activates the target
        conn.execute(sa.text("UPDATE selection_records SET active = true"))
    assert len(due_states(db_engine, NOW, 10)) == 2
