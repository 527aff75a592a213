"""A harvest definition as a person fills it in (a page's form, the CLI's options), checked.

Why a form of strings: the curator pages and ``harvestflow definitions`` send the same fields,
so one function checks them both, field by field, the way a selection record is checked: each
refusal names the field and says what is wrong. The schedule fields are NetarchiveSuite's
(every N hours/days/weeks/months, pinned to a minute, an hour, a weekday or a day of the month,
a start, an end, a repeat count) or a cron expression (engineers). Dates are UTC.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from harvest.common import as_utc
from harvest.errors import HarvestError
from harvest.schedule import (
    DAILY,
    HOURLY,
    MONTHLY,
    WEEKLY,
    Schedule,
    ScheduleError,
    shortest_gap,
)
from harvestflow.formats.integers import INTEGER_MAX, NumberError, parse_int
from harvestflow.formats.seeds import SeedError, check_seed_url, check_text

log = logging.getLogger(__name__)

UNITS = {"hour": HOURLY, "day": DAILY, "week": WEEKLY, "month": MONTHLY}
UNIT_WORDS = {v: k for k, v in UNITS.items()}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SCHEDULE_KINDS = ("none", "every", "cron")  # none: a one-off, harvested on request
MIN_GAP_S = 3600  # the hourly DAG harvests a definition at most once an hour
MAX_SEEDS = 10_000
FIELDS = (
    "name", "comments", "collection", "seeds", "template", "max_objects", "max_bytes",
    "schedule", "every", "unit", "at_minute", "at_hour", "weekday", "day", "start", "end",
    "repeats", "cron",
)  # fmt: skip


class OfficeError(HarvestError, ValueError):
    """A change a person asked for that cannot be made; the message names the field or the
    thing at fault and says what to do."""


@dataclass(frozen=True)
class DefinitionForm:
    """A checked definition: its seeds grouped later by domain, one configuration each."""

    name: str
    comments: str
    collection: str  # whose roles say who may change it ('': none, the global roles)
    seeds: tuple[str, ...]
    template: str
    max_objects: int
    max_bytes: int
    schedule: Schedule | None  # None: a one-off (harvested only on request)

    @property
    def uses_cron(self) -> bool:
        return self.schedule is not None and self.schedule.cron is not None


def checked_text(raw: object, name: str, limit: int = 2000) -> str:
    """A form's text field, stripped: storable text (UTF-8, no NUL) of at most ``limit``
    characters, else :class:`OfficeError` naming the field."""
    value = str(raw or "").strip()
    try:
        check_text(value, name)
    except SeedError as exc:
        raise OfficeError(str(exc)) from None
    if len(value) > limit:
        raise OfficeError(f"{name}: {len(value)} characters, at most {limit}")
    return value


def _text(values: Mapping[str, str], name: str, limit: int = 2000) -> str:
    return checked_text(values.get(name), name, limit)


def _int(values: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    raw = _text(values, name, 40).replace(",", "").replace("_", "")
    if not raw:
        return None
    try:
        return parse_int(raw, name, minimum=low, maximum=high)
    except NumberError as exc:
        raise OfficeError(str(exc)) from None


def _budget(values: Mapping[str, str], name: str, default: int) -> int:
    value = _int(values, name, -1, 2**63 - 1)
    if value == 0:
        # 0 would crawl nothing: job generation leaves such configurations out
        raise OfficeError(f"{name}: -1 (unlimited) or a positive number, not 0")
    return default if value is None else value


def parse_when(raw: str, name: str) -> datetime | None:
    """A form's date: ``YYYY-MM-DD`` or ``YYYY-MM-DD HH:MM`` (UTC); None when empty."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        return as_utc(datetime.fromisoformat(raw.replace("T", " ")))
    except ValueError:
        raise OfficeError(
            f"{name}: {raw[:40]!r} is not a date (YYYY-MM-DD or YYYY-MM-DD HH:MM, UTC)"
        ) from None


def _weekday(raw: str) -> int | None:
    raw = raw.strip().lower()
    if not raw:
        return None
    if raw.isdigit() and 1 <= int(raw) <= 7:
        return int(raw)
    for number, day in enumerate(WEEKDAYS, 1):
        if len(raw) >= 3 and day.startswith(raw):
            return number
    raise OfficeError(f"weekday: {raw[:20]!r} is not a day of the week (monday..sunday or 1..7)")


def parse_schedule(values: Mapping[str, str], now: datetime) -> Schedule | None:
    """The form's schedule (None for a one-off), checked: it must produce dates, and two of its
    events must be at least an hour apart."""
    kind = _text(values, "schedule", 10) or "none"
    if kind not in SCHEDULE_KINDS:
        raise OfficeError(f"schedule: {kind!r} is not one of {', '.join(SCHEDULE_KINDS)}")
    if kind == "none":
        return None
    start = parse_when(str(values.get("start") or ""), "start") or as_utc(now)
    end = parse_when(str(values.get("end") or ""), "end")
    repeats = _int(values, "repeats", 1, INTEGER_MAX)
    if kind == "cron":
        cron = _text(values, "cron", 200)
        if not cron:
            raise OfficeError("cron: a cron expression is needed (e.g. '0 3 * * 1')")
        schedule = Schedule(None, None, start, end, repeats, cron=" ".join(cron.split()))
    else:
        unit_word = _text(values, "unit", 10) or "day"
        if unit_word not in UNITS:
            raise OfficeError(f"unit: {unit_word!r} is not one of {', '.join(UNITS)}")
        schedule = Schedule(
            UNITS[unit_word],
            _int(values, "every", 1, 10_000) or 1,
            start,
            end,
            repeats,
            onminute=_int(values, "at_minute", 0, 59),
            onhour=_int(values, "at_hour", 0, 23),
            ondayofweek=_weekday(str(values.get("weekday") or "")),
            ondayofmonth=_int(values, "day", 1, 31),
        )
    try:
        schedule.validate()
        gap = shortest_gap(schedule, start)
    except ScheduleError as exc:
        raise OfficeError(f"schedule: {exc}") from None
    if gap < MIN_GAP_S:
        raise OfficeError(
            f"schedule: two harvests {gap / 60:.0f} minutes apart; a definition is harvested"
            " at most once an hour"
        )
    return schedule


def parse_seeds(raw: str) -> tuple[str, ...]:
    """The seed URLs, one per line, checked and canonical as a selection record's seeds."""
    seeds: dict[str, None] = {}
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            seeds[check_seed_url(line.strip())] = None
        except SeedError as exc:
            raise OfficeError(f"seeds line {number}: {exc}") from None
    if len(seeds) > MAX_SEEDS:
        raise OfficeError(f"seeds: {len(seeds):,} URLs, at most {MAX_SEEDS:,}")
    return tuple(seeds)


def parse_definition_form(values: Mapping[str, str], now: datetime) -> DefinitionForm:
    """The checked definition of a form (:class:`OfficeError` naming the first field at fault).
    Whether the template exists is checked where the definition is saved (the database)."""
    unknown = sorted(set(values) - set(FIELDS) - {"csrf_token", "edition"})
    if unknown:
        raise OfficeError(f"unknown field(s): {', '.join(unknown)}")
    name = _text(values, "name", 200)
    if not name:
        raise OfficeError("name: a definition needs a name")
    seeds = parse_seeds(_text(values, "seeds", 1_000_000))
    if not seeds:
        raise OfficeError("seeds: at least one seed URL (one per line)")
    return DefinitionForm(
        name=name,
        comments=_text(values, "comments"),
        collection=_text(values, "collection", 500),
        seeds=seeds,
        template=_text(values, "template", 200) or "default_selective",
        max_objects=_budget(values, "max_objects", -1),
        max_bytes=_budget(values, "max_bytes", 1_000_000_000),
        schedule=parse_schedule(values, now),
    )


def schedule_fields(schedule: Schedule | None) -> dict[str, str]:
    """A schedule as the form's fields (to fill the edit form; the inverse of
    :func:`parse_schedule`)."""
    if schedule is None:
        return {"schedule": "none"}

    def when(value: datetime | None) -> str:
        return "" if value is None else as_utc(value).strftime("%Y-%m-%d %H:%M")

    def text(value: int | None) -> str:
        return "" if value is None else str(value)

    fields = {
        "start": when(schedule.startdate),
        "end": when(schedule.enddate),
        "repeats": text(schedule.maxrepeats),
    }
    if schedule.cron is not None:
        return {**fields, "schedule": "cron", "cron": schedule.cron}
    weekday = schedule.ondayofweek
    return {
        **fields,
        "schedule": "every",
        "every": text(schedule.numtimeunits),
        "unit": UNIT_WORDS.get(schedule.timeunit or 0, ""),
        "at_minute": text(schedule.onminute),
        "at_hour": text(schedule.onhour),
        "weekday": WEEKDAYS[weekday - 1] if weekday else "",
        "day": text(schedule.ondayofmonth),
    }


def describe(schedule: Schedule | None) -> str:
    """A schedule in words, for lists and the history."""
    if schedule is None:
        return "one-off (harvested on request)"
    if schedule.cron is not None:
        words = f"cron {schedule.cron} (UTC)"
    else:
        unit = UNIT_WORDS.get(schedule.timeunit or 0, "minute")
        words = f"every {schedule.numtimeunits} {unit}(s)"
        if schedule.ondayofweek:
            words += f" on {WEEKDAYS[schedule.ondayofweek - 1]}"
        if schedule.ondayofmonth:
            words += f" on day {schedule.ondayofmonth}"
        if schedule.onhour is not None or schedule.onminute is not None:
            hour = "HH" if schedule.timeunit == HOURLY else f"{schedule.onhour or 0:02d}"
            words += f" at {hour}:{schedule.onminute or 0:02d}"
    if schedule.startdate is not None:
        words += f", from {as_utc(schedule.startdate):%Y-%m-%d %H:%M}"
    if schedule.enddate is not None:
        words += f" until {as_utc(schedule.enddate):%Y-%m-%d %H:%M}"
    if schedule.maxrepeats is not None:
        words += f", {schedule.maxrepeats} time(s)"
    return words
