"""Schedules of selective harvests: when a definition is due, and its next date.

Why windows: each ``selective_harvest_<frequency>`` DAG run covers the period
``(logical_date - period, logical_date]`` of its frequency. A definition is due in a run when
one of its schedule's events falls in that window. Every event therefore belongs to exactly one
run: a re-run of the same date finds the same definitions, a backfill of a past date harvests
what was due then, and events missed while the DAG was paused are not piled up on the next run
(NetarchiveSuite skips past events). A schedule without a start date has an event at every tick
of its DAG.

Time units are NetarchiveSuite's: 1 HOURLY, 2 DAILY, 3 WEEKLY, 4 MONTHLY, 5 MINUTE.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from dateutil.relativedelta import relativedelta

from harvest.common import as_utc
from harvest.errors import HarvestError

HOURLY, DAILY, WEEKLY, MONTHLY, MINUTE = 1, 2, 3, 4, 5

# DAG frequency -> the period one run covers
FREQUENCY_PERIODS: dict[str, relativedelta] = {
    "daily": relativedelta(days=1),
    "weekly": relativedelta(weeks=1),
    "monthly": relativedelta(months=1),
    "semiannual": relativedelta(months=6),
    "annual": relativedelta(years=1),
}
FREQUENCIES = tuple(FREQUENCY_PERIODS)

# the standard schedules created by ensure_reference_data: name -> (timeunit, every, comment)
STANDARD_SCHEDULES: dict[str, tuple[int, int, str]] = {
    "daily": (DAILY, 1, "every day (selective_harvest_daily)"),
    "weekly": (WEEKLY, 1, "every week (selective_harvest_weekly)"),
    "monthly": (MONTHLY, 1, "every month (selective_harvest_monthly)"),
    "semiannual": (MONTHLY, 6, "twice a year (selective_harvest_semiannual)"),
    "annual": (MONTHLY, 12, "once a year (selective_harvest_annual)"),
}


class ScheduleError(HarvestError, ValueError):
    """A schedule that cannot produce dates (the definition using it is deactivated)."""


@dataclass(frozen=True)
class Schedule:
    """One row of ``schedules`` (only the fields that decide dates)."""

    timeunit: int
    numtimeunits: int
    startdate: datetime | None = None
    enddate: datetime | None = None
    maxrepeats: int | None = None

    def validate(self) -> None:
        """Refuse schedules that cannot produce a sensible date (bad data from an import...)."""
        self.step()
        if self.maxrepeats is not None and self.maxrepeats <= 0:
            raise ScheduleError(f"max repeats {self.maxrepeats}: must be positive")
        if (
            self.startdate is not None
            and self.enddate is not None
            and as_utc(self.enddate) < as_utc(self.startdate)
        ):
            raise ScheduleError(
                f"the schedule ends ({self.enddate:%Y-%m-%d %H:%M}) before it starts"
                f" ({self.startdate:%Y-%m-%d %H:%M})"
            )

    def step(self) -> relativedelta:
        n = self.numtimeunits
        if n is None or n <= 0:
            raise ScheduleError(f"every {n} time units: must be a positive number")
        units = {
            MINUTE: relativedelta(minutes=n),
            HOURLY: relativedelta(hours=n),
            DAILY: relativedelta(days=n),
            WEEKLY: relativedelta(weeks=n),
            MONTHLY: relativedelta(months=n),
        }
        if self.timeunit not in units:
            raise ScheduleError(f"unknown time unit {self.timeunit} (1..5)")
        return units[self.timeunit]


def frequency_period(frequency: str) -> relativedelta:
    try:
        return FREQUENCY_PERIODS[frequency]
    except KeyError:
        raise ValueError(
            f"unknown frequency {frequency!r}; expected one of {', '.join(FREQUENCIES)}"
        ) from None


def _approx_seconds(step: relativedelta) -> float:
    return (
        step.months * 30.436875 * 86400
        + step.days * 86400
        + step.hours * 3600
        + step.minutes * 60
        + step.seconds
    )


def first_event_after(schedule: Schedule, after: datetime) -> datetime | None:
    """The first event strictly after ``after`` of an anchored schedule, ignoring end/repeats."""
    if schedule.startdate is None:
        raise ScheduleError("schedule has no start date: its events are the DAG's ticks")
    start = as_utc(schedule.startdate)
    after = as_utc(after)
    step = schedule.step()
    if start > after:
        return start
    # jump close to the answer, then walk (months have uneven lengths)
    k = max(int((after - start).total_seconds() / _approx_seconds(step)) - 2, 0)
    event = start + step * k
    while event <= after:
        k += 1
        event = start + step * k
    return event


def event_index(schedule: Schedule, event: datetime) -> int:
    """How many events of an anchored schedule come before ``event`` (0 for the start)."""
    assert schedule.startdate is not None
    start = as_utc(schedule.startdate)
    step = schedule.step()
    k = max(int((as_utc(event) - start).total_seconds() / _approx_seconds(step)) - 2, 0)
    while start + step * (k + 1) <= as_utc(event):
        k += 1
    return k


def due_in_window(
    schedule: Schedule, frequency: str, logical_date: datetime, runs_done: int = 0
) -> bool:
    """Whether the schedule has an event in the run's window ``(logical - period, logical]``.

    ``runs_done`` counts the runs already made (for ``maxrepeats`` of unanchored schedules).
    """
    end = as_utc(logical_date)
    begin = end - frequency_period(frequency)
    schedule.validate()
    if schedule.enddate is not None and as_utc(schedule.enddate) <= begin:
        return False
    if schedule.startdate is None:
        return not (schedule.maxrepeats is not None and runs_done >= schedule.maxrepeats)
    event = first_event_after(schedule, begin)
    if event is None or event > end:
        return False
    if schedule.enddate is not None and event > as_utc(schedule.enddate):
        return False
    return not (
        schedule.maxrepeats is not None and event_index(schedule, event) >= schedule.maxrepeats
    )


def next_date(
    schedule: Schedule, frequency: str, logical_date: datetime, runs_done: int
) -> datetime | None:
    """The next harvest date after the run at ``logical_date``; None when the schedule is over.

    Unanchored schedules fire at every DAG tick, so the next date is the next tick.
    """
    logical_date = as_utc(logical_date)
    schedule.validate()
    if schedule.maxrepeats is not None and runs_done >= schedule.maxrepeats:
        return None
    if schedule.startdate is None:
        nxt = logical_date + frequency_period(frequency)
    else:
        nxt = first_event_after(schedule, logical_date)
        if (
            nxt is not None
            and schedule.maxrepeats is not None
            and event_index(schedule, nxt) >= schedule.maxrepeats
        ):
            return None
    if nxt is not None and schedule.enddate is not None and nxt > as_utc(schedule.enddate):
        return None
    return nxt
