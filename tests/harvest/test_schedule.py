"""Schedule windows: each event belongs to exactly one DAG run; next dates; ends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harvest.schedule import (
    DAILY,
    HOURLY,
    MONTHLY,
    WEEKLY,
    Schedule,
    ScheduleError,
    anchor,
    due_in_window,
    first_event_after,
    next_date,
    next_event,
    shortest_gap,
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
        due_in_window(Schedule(DAILY, 1), "fortnightly", dt(2026, 11, 22))


def test_schedule_ending_before_it_starts_is_an_error():
    s = Schedule(DAILY, 1, startdate=dt(2026, 11, 1), enddate=dt(2026, 10, 1))
    with pytest.raises(ScheduleError, match="before it starts"):
        due_in_window(s, "daily", dt(2026, 11, 22))


def test_hourly_schedule_is_due_in_the_next_hourly_run():
    # an event crawl made at 10:20, every hour: its first harvest is the 11:00 run's
    s = Schedule(HOURLY, 1, startdate=dt(2026, 11, 22, 10, 20))
    assert not due_in_window(s, "hourly", dt(2026, 11, 22, 10))
    assert due_in_window(s, "hourly", dt(2026, 11, 22, 11))
    assert due_in_window(s, "hourly", dt(2026, 11, 22, 12))
    assert next_date(s, "hourly", dt(2026, 11, 22, 11), 1) == dt(2026, 11, 22, 11, 20)


def test_pinned_schedules_start_at_their_first_pinned_time():
    start = dt(2026, 11, 18, 9, 30)  # a Wednesday
    assert anchor(Schedule(HOURLY, 2, startdate=start, onminute=15)) == dt(2026, 11, 18, 10, 15)
    assert anchor(Schedule(DAILY, 1, startdate=start, onhour=3)) == dt(2026, 11, 19, 3)
    assert anchor(Schedule(DAILY, 1, startdate=start, onhour=9, onminute=45)) == dt(
        2026, 11, 18, 9, 45
    )
    # weekly on Mondays (ISO 1) at 06:00; on Wednesdays (the start's day) later that day
    assert anchor(Schedule(WEEKLY, 1, startdate=start, ondayofweek=1, onhour=6)) == dt(
        2026, 11, 23, 6
    )
    assert anchor(Schedule(WEEKLY, 1, startdate=start, ondayofweek=3, onhour=12)) == dt(
        2026, 11, 18, 12
    )
    # monthly on the 31st: November's last day, then December 31st, then February 28th
    monthly = Schedule(MONTHLY, 1, startdate=start, ondayofmonth=31)
    assert anchor(monthly) == dt(2026, 11, 30)
    assert first_event_after(monthly, dt(2026, 11, 30)) == dt(2026, 12, 31)
    assert first_event_after(monthly, dt(2027, 2, 1)) == dt(2027, 2, 28)
    # monthly on the 5th: already past in November, so December 5th
    assert anchor(Schedule(MONTHLY, 1, startdate=start, ondayofmonth=5)) == dt(2026, 12, 5)


def test_a_pinned_field_of_another_unit_or_out_of_range_is_refused_by_name():
    start = dt(2026, 11, 18)
    with pytest.raises(ScheduleError, match="ondayofweek: not a field of a schedule in days"):
        Schedule(DAILY, 1, startdate=start, ondayofweek=1).validate()
    with pytest.raises(ScheduleError, match="onhour 24: must be between 0 and 23"):
        Schedule(DAILY, 1, startdate=start, onhour=24).validate()
    with pytest.raises(ScheduleError, match="needs a start date"):
        Schedule(DAILY, 1, onhour=3).validate()


def test_cron_schedule_events_within_its_start_and_end_and_repeats_count_runs():
    s = Schedule(None, None, startdate=dt(2026, 11, 18), enddate=dt(2026, 11, 21), cron="0 3 * * *")
    assert not due_in_window(s, "hourly", dt(2026, 11, 17, 4))  # before the start
    assert not due_in_window(s, "hourly", dt(2026, 11, 18, 2))
    assert due_in_window(s, "hourly", dt(2026, 11, 18, 3))
    assert not due_in_window(s, "hourly", dt(2026, 11, 18, 4))
    assert next_date(s, "hourly", dt(2026, 11, 18, 3), 1) == dt(2026, 11, 19, 3)
    assert next_date(s, "hourly", dt(2026, 11, 20, 3), 3) is None  # 11-21 03:00 is past the end
    repeated = Schedule(None, None, cron="0 3 * * *", maxrepeats=2)
    assert due_in_window(repeated, "hourly", dt(2026, 11, 19, 3), runs_done=1)
    assert not due_in_window(repeated, "hourly", dt(2026, 11, 20, 3), runs_done=2)


def test_a_bad_cron_expression_is_refused_with_the_expression():
    with pytest.raises(ScheduleError, match="cron '0 3 \\* \\*': not a cron expression"):
        Schedule(None, None, cron="0 3 * *").validate()
    with pytest.raises(ScheduleError, match="not a cron expression"):
        Schedule(None, None, cron="61 * * * *").validate()


def test_next_event_and_shortest_gap():
    s = Schedule(HOURLY, 6, startdate=dt(2026, 11, 18, 9, 30), onminute=0, maxrepeats=2)
    assert next_event(s, dt(2026, 11, 18, 9, 30)) == dt(2026, 11, 18, 10)
    assert next_event(s, dt(2026, 11, 18, 10)) == dt(2026, 11, 18, 10)
    assert next_event(s, dt(2026, 11, 18, 10, 1)) == dt(2026, 11, 18, 16)
    assert next_event(s, dt(2026, 11, 18, 16, 1)) is None  # two repeats only
    assert shortest_gap(s, dt(2026, 11, 18)) == 6 * 3600
    assert (
        shortest_gap(Schedule(MONTHLY, 1, startdate=dt(2026, 1, 1)), dt(2026, 1, 1)) == 28 * 86400
    )
    cron = Schedule(None, None, cron="0,20 9 * * *")
    assert shortest_gap(cron, dt(2026, 11, 18)) == 20 * 60
