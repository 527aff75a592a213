"""Statistics of a crawl that never ends and the per-host report, on a state with known dues."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from harvest.continuous.policy import HOUR, RevisitPolicy
from harvest.continuous.report import crawl_stats, format_host_report, host_report
from harvest.continuous.store import save_states
from harvest.continuous.urlstate import new_state

NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


def test_overdue_backlog_intervals_and_change_rates_per_host(db_engine: sa.Engine) -> None:
    with db_engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM continuous_url_state"))
    p = RevisitPolicy()
    rows = [  # host, minutes from NOW to next due, wait hours, visits, changes
        ("a.test", -180, 1, 10, 5),  # 3 h late: overdue
        ("a.test", -5, 4, 4, 0),  # due 5 min ago: in the backlog, not (yet) overdue
        ("a.test", 60, 2, 6, 3),  # not due
        ("b.test", -30, 48, 2, 0),  # 30 min late: overdue
        ("b.test", 600, 24, 2, 2),
    ]
    states = []
    for i, (host, minutes, wait_h, visits, changes) in enumerate(rows):
        s = new_state(f"http://{host}/{i}", host, f"http://{host}/", 1, NOW, p)
        s.next_due = NOW + dt.timedelta(minutes=minutes)
        s.wait_s, s.visits, s.changes = wait_h * HOUR, visits, changes
        states.append(s)
    with db_engine.begin() as conn:
        save_states(conn, states)
    try:
        _check(db_engine)
    finally:  # the session database is shared with the other continuous tests
        with db_engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM continuous_url_state"))


def _check(db_engine: sa.Engine) -> None:
    stats = crawl_stats(db_engine, NOW)
    assert (stats.urls, stats.visits, stats.changes) == (5, 24, 10)
    assert (stats.due, stats.overdue) == (3, 2)
    assert stats.max_overdue_s == 3 * HOUR and stats.mean_overdue_s == (3 * HOUR + 1800) / 2
    line = stats.progress_line(7)
    assert "due 3 / overdue 2 (max 3.0 h late) / done 7" in line and "42% changed" in line

    a, b = host_report(db_engine, NOW)  # ordered by backlog, largest first
    assert (a["host"], a["urls"], a["backlog"], a["overdue"]) == ("a.test", 3, 2, 1)
    assert (a["min_wait_h"], a["median_wait_h"], a["max_wait_h"]) == (1, 2, 4)
    assert a["change_rate"] == round(8 / 20, 3) and a["max_overdue_h"] == 3
    assert (b["host"], b["backlog"], b["overdue"], b["max_overdue_h"]) == ("b.test", 1, 1, 0.5)
    assert b["change_rate"] == 0.5
    table = format_host_report([a, b]).splitlines()
    assert len(table) == 3 and table[1].startswith("a.test") and "1.0/2.0/4.0" in table[1]
