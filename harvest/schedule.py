"""Schedules of selective harvests: when a definition is due, and its next date.

Why windows: each ``selective_harvest_<frequency>`` DAG run covers the period
``(logical_date - period, logical_date]`` of its frequency. A definition is due in a run when
one of its schedule's events falls in that window. Every event therefore belongs to exactly one
run: a re-run of the same date finds the same definitions, a backfill of a past date harvests
what was due then, and events missed while the DAG was paused are not piled up on the next run
(NetarchiveSuite skips past events). A schedule without a start date has an event at every tick
of its DAG.

Time units are NetarchiveSuite's (1 HOURLY … 5 MINUTE); an anchored schedule may pin its first
event (``onminute``, ``onhour``, ``ondayofweek``, ``ondayofmonth``), then every N units. A cron
schedule (engineers) has its events where the expression says (UTC).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise

from croniter import croniter
from dateutil.relativedelta import relativedelta

from harvest.common import as_utc
from harvest.errors import HarvestError

HOURLY, DAILY, WEEKLY, MONTHLY, MINUTE = 1, 2, 3, 4, 5

# DAG frequency -> the period one run covers
FREQUENCY_PERIODS: dict[str, relativedelta] = {
    "hourly": relativedelta(hours=1),  # the schedules made in the curator pages and the CLI
    "daily": relativedelta(days=1),
    "weekly": relativedelta(weeks=1),
    "monthly": relativedelta(months=1),
    "semiannual": relativedelta(months=6),
    "annual": relativedelta(years=1),
}
FREQUENCIES = tuple(FREQUENCY_PERIODS)
# the on* fields each time unit may pin (finer fields left empty are 0)
ON_FIELDS: dict[int, tuple[str, ...]] = {
    MINUTE: (),
    HOURLY: ("onminute",),
    DAILY: ("onminute", "onhour"),
    WEEKLY: ("onminute", "onhour", "ondayofweek"),
    MONTHLY: ("onminute", "onhour", "ondayofmonth"),
}
ON_RANGES = {"onminute": (0, 59), "onhour": (0, 23), "ondayofweek": (1, 7), "ondayofmonth": (1, 31)}

# the standard schedules created by ensure_reference_data: name -> (timeunit, every, comment)
STANDARD_SCHEDULES: dict[str, tuple[int, int, str]] = {
    "hourly": (HOURLY, 1, "every hour (selective_harvest_hourly)"),
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

    timeunit: int | None
    numtimeunits: int | None
    startdate: datetime | None = None
    enddate: datetime | None = None
    maxrepeats: int | None = None
    onminute: int | None = None
    onhour: int | None = None
    ondayofweek: int | None = None  # ISO: 1 Monday .. 7 Sunday
    ondayofmonth: int | None = None
    cron: str | None = None

    def validate(self) -> None:
        """Refuse schedules that cannot produce a sensible date (bad data from an import...)."""
        if self.cron is not None:
            cron_iter(self.cron, datetime(2026, 1, 1, tzinfo=UTC))
        else:
            self.step()
            self._check_on_fields()
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

    def _check_on_fields(self) -> None:
        allowed = ON_FIELDS.get(self.timeunit or 0, ())
        for name, (low, high) in ON_RANGES.items():
            value = getattr(self, name)
            if value is None:
                continue
            if name not in allowed:
                raise ScheduleError(f"{name}: not a field of a schedule in {unit_name(self)}s")
            if not low <= value <= high:
                raise ScheduleError(f"{name} {value}: must be between {low} and {high}")
        if self.pinned and self.startdate is None:
            raise ScheduleError("a schedule pinned to a time or a day needs a start date")

    @property
    def pinned(self) -> bool:
        return any(getattr(self, name) is not None for name in ON_RANGES)

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


UNIT_NAMES = {MINUTE: "minute", HOURLY: "hour", DAILY: "day", WEEKLY: "week", MONTHLY: "month"}


def unit_name(schedule: Schedule) -> str:
    return UNIT_NAMES.get(schedule.timeunit or 0, f"unit {schedule.timeunit}")


def cron_iter(expression: str, start: datetime) -> croniter:
    """An iterator of the cron expression's events after ``start`` (UTC); a clear error for a
    bad one."""
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise ScheduleError(
            f"cron {expression!r}: not a cron expression (five fields: minute hour day month"
            " weekday, e.g. '0 3 * * 1')"
        )
    return croniter(expression, as_utc(start))


def _cron_next(schedule: Schedule, after: datetime) -> datetime:
    """The first event of a cron schedule strictly after ``after`` and not before its start."""
    assert schedule.cron is not None
    after = as_utc(after)
    if schedule.startdate is not None:
        after = max(after, as_utc(schedule.startdate) - relativedelta(seconds=1))
    return as_utc(cron_iter(schedule.cron, after).get_next(datetime))


def anchor(schedule: Schedule) -> datetime:
    """The first event of an anchored schedule: its start, or the first pinned time at or after
    it (an hourly one at minute M, a daily one at H:M, a weekly one on day D at H:M, a monthly
    one on day D at H:M, D past the month's end meaning its last day)."""
    if schedule.startdate is None:
        raise ScheduleError("schedule has no start date: its events are the DAG's ticks")
    start = as_utc(schedule.startdate)
    if not schedule.pinned:
        return start
    time = {"minute": schedule.onminute or 0, "second": 0, "microsecond": 0}
    if schedule.timeunit == HOURLY:
        first, later = start + relativedelta(**time), relativedelta(hours=1)
    elif schedule.timeunit == DAILY:
        first = start + relativedelta(hour=schedule.onhour or 0, **time)
        later = relativedelta(days=1)
    elif schedule.timeunit == WEEKLY:
        ahead = ((schedule.ondayofweek or start.isoweekday()) - start.isoweekday()) % 7
        first = start + relativedelta(days=ahead, hour=schedule.onhour or 0, **time)
        later = relativedelta(weeks=1)
    else:  # MONTHLY (validate() allows no other pinned unit)
        day = schedule.ondayofmonth or start.day
        first = start + relativedelta(day=day, hour=schedule.onhour or 0, **time)
        if first < start:
            first = start + relativedelta(months=1, day=day, hour=schedule.onhour or 0, **time)
        return first
    return first if first >= start else first + later


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
    if schedule.cron is not None:
        return _cron_next(schedule, after)
    start = anchor(schedule)
    after = as_utc(after)
    step = schedule.step()
    if start > after:
        return start
    # jump close to the answer, then walk (months have uneven lengths)
    k = max(int((after - start).total_seconds() / _approx_seconds(step)) - 2, 0)
    event = _event(schedule, start, step, k)
    while event <= after:
        k += 1
        event = _event(schedule, start, step, k)
    return event


def _event(schedule: Schedule, first: datetime, step: relativedelta, k: int) -> datetime:
    """The k-th event after the first; a monthly one pinned to day 29-31 keeps that day in the
    months that have it (the first may have been clamped to a shorter month's end)."""
    event = first + step * k
    if schedule.timeunit == MONTHLY and schedule.ondayofmonth is not None:
        event += relativedelta(day=schedule.ondayofmonth)
    return event


def event_index(schedule: Schedule, event: datetime) -> int:
    """How many events of an anchored schedule come before ``event`` (0 for the start)."""
    start = anchor(schedule)
    step = schedule.step()
    k = max(int((as_utc(event) - start).total_seconds() / _approx_seconds(step)) - 2, 0)
    while _event(schedule, start, step, k + 1) <= as_utc(event):
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
    repeats_done = schedule.maxrepeats is not None and runs_done >= schedule.maxrepeats
    if schedule.startdate is None and schedule.cron is None:
        return not repeats_done
    event = first_event_after(schedule, begin)
    if event is None or event > end:
        return False
    if schedule.enddate is not None and event > as_utc(schedule.enddate):
        return False
    if schedule.cron is not None:  # a cron schedule's repeats count its runs
        return not repeats_done
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
    if schedule.cron is not None:
        nxt = first_event_after(schedule, logical_date)
    elif schedule.startdate is None:
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


def next_event(schedule: Schedule, now: datetime) -> datetime | None:
    """The schedule's first event at or after ``now`` within its end and repeats (the next
    date a new or edited definition shows); None when it has none left."""
    schedule.validate()
    nxt = first_event_after(schedule, as_utc(now) - relativedelta(microseconds=1))
    if nxt is None or (schedule.enddate is not None and nxt > as_utc(schedule.enddate)):
        return None
    if (
        schedule.cron is None
        and schedule.maxrepeats is not None
        and event_index(schedule, nxt) >= schedule.maxrepeats
    ):
        return None
    return nxt


def shortest_gap(schedule: Schedule, start: datetime, events: int = 48) -> float:
    """The shortest time, in seconds, between two events (a cron schedule's among its next
    ``events`` after ``start``; a month counted as 28 days): a schedule run by the hourly DAG
    harvests at most once an hour, so closer events are refused where a schedule is made."""
    schedule.validate()
    if schedule.cron is None:
        step = schedule.step()
        return _approx_seconds(step) - step.months * 2.436875 * 86400
    times = [_cron_next(schedule, start)]
    for _ in range(events - 1):
        times.append(_cron_next(schedule, times[-1]))
    return min((b - a).total_seconds() for a, b in pairwise(times))
