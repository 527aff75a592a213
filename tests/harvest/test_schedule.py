"""Schedule windows: each event belongs to exactly one DAG run; next dates; ends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harvest.schedule import (
    DAILY,
    MONTHLY,
    WEEKLY,
    Schedule,
    ScheduleError,
    due_in_window,
    first_event_after,
    next_date,
)


def dt(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_unanchored_schedule_is_due_at_every_tick_and_next_is_the_next_tick():
    s = Schedule(DAILY, 1)
    assert due_in_window(s, "daily", dt(2026, 11, 22))
    assert next_date(s, "daily", dt(2026, 11, 22), 1) == dt(2026, 11, 23)


def test_weekly_event_is_due_in_the_one_run_whose_window_holds_it():
    # starts Wednesday 2026-11-18 09:00; the weekly DAG runs on Mondays
    s = Schedule(WEEKLY, 1, startdate=dt(2026, 11, 18, 9))
    assert not due_in_window(s, "weekly", dt(2026, 11, 16))  # (11-09, 11-16]: before start
    assert due_in_window(s, "weekly", dt(2026, 11, 23))  # (11-16, 11-23] holds 11-18
    assert due_in_window(s, "weekly", dt(2026, 11, 30))  # holds 11-25
    # a daily DAG would see the event only on the day after it
    assert not due_in_window(s, "daily", dt(2026, 11, 18))
    assert due_in_window(s, "daily", dt(2026, 11, 19))
    assert not due_in_window(s, "daily", dt(2026, 11, 20))


def test_monthly_schedule_on_the_31st_does_not_drift():
    s = Schedule(MONTHLY, 1, startdate=dt(2026, 1, 31))
    assert first_event_after(s, dt(2026, 2, 1)) == dt(2026, 2, 28)
    assert first_event_after(s, dt(2026, 3, 1)) == dt(2026, 3, 31)
    assert first_event_after(s, dt(2027, 4, 1)) == dt(2027, 4, 30)


def test_semiannual_schedule_every_six_months():
    s = Schedule(MONTHLY, 6, startdate=dt(2026, 1, 5, 9))
    assert first_event_after(s, dt(2026, 1, 5, 9)) == dt(2026, 7, 5, 9)
    assert due_in_window(s, "semiannual", dt(2026, 7, 10))


def test_max_repeats_ends_the_schedule():
    s = Schedule(WEEKLY, 1, startdate=dt(2026, 11, 2), maxrepeats=2)  # events 11-02, 11-09
    assert due_in_window(s, "weekly", dt(2026, 11, 9))
    assert not due_in_window(s, "weekly", dt(2026, 11, 16))  # third event 11-16
    assert next_date(s, "weekly", dt(2026, 11, 2), 1) == dt(2026, 11, 9)
    assert next_date(s, "weekly", dt(2026, 11, 9), 2) is None


def test_unanchored_max_repeats_counts_runs():
    s = Schedule(DAILY, 1, maxrepeats=3)
    assert due_in_window(s, "daily", dt(2026, 11, 22), runs_done=2)
    assert not due_in_window(s, "daily", dt(2026, 11, 22), runs_done=3)


def test_end_date_ends_the_schedule():
    s = Schedule(DAILY, 1, startdate=dt(2026, 11, 1), enddate=dt(2026, 11, 3, 12))
    assert due_in_window(s, "daily", dt(2026, 11, 3))
    assert not due_in_window(s, "daily", dt(2026, 11, 5))
    assert next_date(s, "daily", dt(2026, 11, 3), 3) is None


def test_a_broken_schedule_raises_a_schedule_error():
    with pytest.raises(ScheduleError):
        due_in_window(Schedule(9, 1), "daily", dt(2026, 11, 22))
    with pytest.raises(ScheduleError):
        due_in_window(Schedule(DAILY, 0, startdate=dt(2026, 1, 1)), "daily", dt(2026, 11, 22))


def test_unknown_frequency_is_refused():
    with pytest.raises(ValueError, match="unknown frequency"):
        due_in_window(Schedule(DAILY, 1), "hourly", dt(2026, 11, 22))


def test_schedule_ending_before_it_starts_is_an_error():
    s = Schedule(DAILY, 1, startdate=dt(2026, 11, 1), enddate=dt(2026, 10, 1))
    with pytest.raises(ScheduleError, match="before it starts"):
        due_in_window(s, "daily", dt(2026, 11, 22))
