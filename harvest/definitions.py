"""Harvest definitions: selective (partial, scheduled) and snapshot (full), and their runs.

Why a ``harvest_runs`` table (sql/002): a DAG run is identified by its logical date; mapping
(definition, logical date) to a run number once makes re-runs and backfills find the same run
(and therefore the same jobs) instead of creating a second one. Definitions whose schedule
cannot be evaluated are deactivated with the reason, as NetarchiveSuite does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import as_utc, engine_or_default, harvest_settings
from harvest.schedule import (
    FREQUENCIES,
    Schedule,
    ScheduleError,
    due_in_window,
    frequency_period,
    next_date,
)

log = logging.getLogger(__name__)

FINISHED = "schedule finished"  # the inactive reason of a definition whose schedule is over


def channel_id(conn: Connection, name: str) -> int:
    cid = conn.execute(sa.text("SELECT id FROM harvestchannel WHERE name = :n"), {"n": name})
    value = cid.scalar()
    if value is None:
        raise ValueError(f"unknown harvest channel {name!r} (run ensure_reference_data first)")
    return int(value)


def schedule_id(conn: Connection, name: str) -> int:
    sid = conn.execute(sa.text("SELECT schedule_id FROM schedules WHERE name = :n"), {"n": name})
    value = sid.scalar()
    if value is None:
        raise ValueError(f"unknown schedule {name!r} (run ensure_reference_data first)")
    return int(value)


def ensure_schedule(
    conn: Connection,
    name: str,
    *,
    timeunit: int,
    numtimeunits: int,
    startdate: datetime | None = None,
    enddate: datetime | None = None,
    maxrepeats: int | None = None,
    comments: str | None = None,
) -> int:
    """Create or update a named schedule (e.g. one per crawl-feed target with a start date)."""
    return int(
        conn.execute(
            sa.text(
                "INSERT INTO schedules (name, comments, startdate, enddate, maxrepeats, timeunit,"
                " numtimeunits) VALUES (:n, :c, :s, :e, :m, :u, :k) ON CONFLICT (name) DO UPDATE"
                " SET startdate = EXCLUDED.startdate, enddate = EXCLUDED.enddate,"
                " maxrepeats = EXCLUDED.maxrepeats, timeunit = EXCLUDED.timeunit,"
                " numtimeunits = EXCLUDED.numtimeunits RETURNING schedule_id"
            ),
            {
                "n": name,
                "c": comments,
                "s": startdate,
                "e": enddate,
                "m": maxrepeats,
                "u": timeunit,
                "k": numtimeunits,
            },
        ).scalar_one()
    )


def ensure_selective_definition(
    conn: Connection,
    name: str,
    *,
    frequency: str | None,
    config_ids: Iterable[int] = (),
    schedule: str | None = None,
    channel: str | None = None,
    resolve: dict[str, str] | None = None,
    crawlertraps: Iterable[str] | None = None,
    comments: str | None = None,
    audience: str | None = None,
    replace_configs: bool = False,
) -> int:
    """Create or update a selective definition and add configurations to it (UPSERT by name).

    ``frequency`` names the DAG that harvests it (None: one-off, only harvested on request);
    ``schedule`` defaults to the standard schedule of that frequency. ``resolve`` and
    ``crawlertraps`` left at None keep what an existing definition has (an operator's traps
    survive the next selection transfer).
    """
    if frequency is not None and frequency not in FREQUENCIES:
        raise ValueError(f"unknown frequency {frequency!r}; expected one of {FREQUENCIES}")
    chan = channel_id(conn, channel or harvest_settings()["high_priority_channel"])
    sid = schedule_id(conn, schedule or frequency or "daily")
    hid = int(
        conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (name, comments, kind, channel_id, audience,"
                " crawlertraps, resolve) VALUES (:n, :c, 'partial', :ch, :a, CAST(:t AS text[]),"
                " CAST(:r AS jsonb)) ON CONFLICT (name) DO UPDATE SET"
                " comments = COALESCE(EXCLUDED.comments, harvestdefinitions.comments),"
                " channel_id = EXCLUDED.channel_id,"
                " crawlertraps = CASE WHEN :keep_t THEN harvestdefinitions.crawlertraps"
                "  ELSE EXCLUDED.crawlertraps END,"
                " resolve = CASE WHEN :keep_r THEN harvestdefinitions.resolve"
                "  ELSE EXCLUDED.resolve END RETURNING harvest_id"
            ),
            {
                "n": name,
                "c": comments,
                "ch": chan,
                "a": audience,
                "t": sorted(set(crawlertraps or ())),
                "r": json.dumps(resolve or {}, sort_keys=True),
                "keep_t": crawlertraps is None,
                "keep_r": resolve is None,
            },
        ).scalar_one()
    )
    conn.execute(
        sa.text(
            "INSERT INTO partialharvests (harvest_id, schedule_id, frequency) VALUES (:h, :s, :f)"
            " ON CONFLICT (harvest_id) DO UPDATE SET schedule_id = EXCLUDED.schedule_id,"
            " frequency = EXCLUDED.frequency"
        ),
        {"h": hid, "s": sid, "f": frequency},
    )
    set_configs(conn, hid, config_ids, replace=replace_configs)
    return hid


def ensure_snapshot_definition(
    conn: Connection,
    name: str,
    *,
    max_objects: int = -1,
    max_bytes: int = -1,
    max_job_running_time_s: int = 0,
    previous_harvest_id: int | None = None,
    channel: str | None = None,
    comments: str | None = None,
) -> int:
    """Create or update a snapshot (broad) definition (UPSERT by name).

    Its configurations are every active domain's default configuration, aliases left out; with
    ``previous_harvest_id`` (a second step) only the domains that stopped on a harvest limit
    in that definition.
    """
    chan = channel_id(conn, channel or harvest_settings()["low_priority_channel"])
    hid = int(
        conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (name, comments, kind, channel_id)"
                " VALUES (:n, :c, 'full', :ch) ON CONFLICT (name) DO UPDATE SET"
                " comments = COALESCE(EXCLUDED.comments, harvestdefinitions.comments),"
                " channel_id = EXCLUDED.channel_id RETURNING harvest_id"
            ),
            {"n": name, "c": comments, "ch": chan},
        ).scalar_one()
    )
    conn.execute(
        sa.text(
            "INSERT INTO fullharvests (harvest_id, maxobjects, maxbytes, maxjobrunningtime,"
            " previoushd) VALUES (:h, :o, :b, :t, :p) ON CONFLICT (harvest_id) DO UPDATE SET"
            " maxobjects = EXCLUDED.maxobjects, maxbytes = EXCLUDED.maxbytes,"
            " maxjobrunningtime = EXCLUDED.maxjobrunningtime, previoushd = EXCLUDED.previoushd"
        ),
        {
            "h": hid,
            "o": max_objects,
            "b": max_bytes,
            "t": max_job_running_time_s,
            "p": previous_harvest_id,
        },
    )
    return hid


def set_configs(
    conn: Connection, harvest_id: int, config_ids: Iterable[int], *, replace: bool = False
) -> None:
    ids = sorted(set(config_ids))
    if replace:
        conn.execute(
            sa.text(
                "DELETE FROM harvest_configs WHERE harvest_id = :h"
                " AND NOT config_id = ANY(CAST(:c AS integer[]))"
            ),
            {"h": harvest_id, "c": ids},
        )
    if ids:
        conn.execute(
            sa.text(
                "INSERT INTO harvest_configs (harvest_id, config_id)"
                " SELECT :h, unnest(CAST(:c AS integer[])) ON CONFLICT DO NOTHING"
            ),
            {"h": harvest_id, "c": ids},
        )


def set_collections(conn: Connection, harvest_id: int, collections: Iterable[str]) -> None:
    """The collections a definition belongs to (whose roles say who may change it)."""
    conn.execute(
        sa.text("UPDATE harvestdefinitions SET collections = :c WHERE harvest_id = :h"),
        {"h": harvest_id, "c": sorted(set(collections))},
    )


def collections_of(conn: Connection, harvest_id: int) -> list[str] | None:
    """The collections a definition belongs to (None: no such definition)."""
    return conn.execute(
        sa.text("SELECT collections FROM harvestdefinitions WHERE harvest_id = :h"),
        {"h": harvest_id},
    ).scalar()


def job_collections(conn: Connection, job_id: int) -> list[str] | None:
    """The collections of a job's definition (None: no such job)."""
    row = conn.execute(
        sa.text(
            "SELECT h.collections FROM jobs j JOIN harvestdefinitions h USING (harvest_id)"
            " WHERE j.job_id = :j"
        ),
        {"j": job_id},
    ).first()
    return None if row is None else list(row.collections)


def deactivate(conn: Connection, harvest_id: int, reason: str) -> None:
    log.warning("harvest definition %s deactivated: %s", harvest_id, reason)
    conn.execute(
        sa.text(
            "UPDATE harvestdefinitions SET isactive = false, inactive_reason = :r,"
            " edition = edition + 1 WHERE harvest_id = :h"
        ),
        {"h": harvest_id, "r": reason},
    )


# the schedules columns that decide dates, as the queries below select them
SCHEDULE_COLUMNS = (
    "s.timeunit, s.numtimeunits, s.startdate, s.enddate, s.maxrepeats, s.onminute, s.onhour,"
    " s.ondayofweek, s.ondayofmonth, s.cron"
)


def schedule_of(row: Any) -> Schedule:
    """The :class:`Schedule` of a row that selected :data:`SCHEDULE_COLUMNS`."""
    return Schedule(
        timeunit=row.timeunit,
        numtimeunits=row.numtimeunits,
        startdate=row.startdate,
        enddate=row.enddate,
        maxrepeats=row.maxrepeats,
        onminute=row.onminute,
        onhour=row.onhour,
        ondayofweek=row.ondayofweek,
        ondayofmonth=row.ondayofmonth,
        cron=row.cron,
    )


_PARTIAL_SQL = (
    "SELECT h.harvest_id, h.name, h.isactive, h.inactive_reason, h.numevents, "
    + SCHEDULE_COLUMNS
    + ","
    " (SELECT count(*) FROM harvest_runs r WHERE r.harvest_id = h.harvest_id"
    "  AND r.logical_date < :ld AND NOT r.oneoff) AS runs_before,"
    " EXISTS (SELECT 1 FROM harvest_runs r WHERE r.harvest_id = h.harvest_id"
    "  AND r.logical_date = :ld) AS has_run"
    " FROM harvestdefinitions h JOIN partialharvests p USING (harvest_id)"
    " JOIN schedules s USING (schedule_id)"
    " WHERE p.frequency = :f ORDER BY h.harvest_id"
)


def due_definitions(
    frequency: str, logical_date: datetime, engine: Engine | None = None
) -> list[int]:
    """Selective definitions of ``frequency`` due in the run at ``logical_date``.

    A definition that already has a run at this date is always returned (re-running a DAG run
    redoes the same work); a definition whose schedule cannot be evaluated is deactivated with
    the reason and skipped, the others go on. One deactivated because its schedule is over is
    still evaluated, so that a backfill of a date inside the schedule harvests what was due then
    (the schedule's end date and repeats leave later dates out); any other inactive one is not.
    """
    frequency_period(frequency)
    engine = engine_or_default(engine)
    ld = as_utc(logical_date)
    due: list[int] = []
    with engine.begin() as conn:
        rows = conn.execute(sa.text(_PARTIAL_SQL), {"f": frequency, "ld": ld}).all()
        for row in rows:
            if row.has_run:
                due.append(row.harvest_id)
                continue
            if not row.isactive and not (row.inactive_reason or "").startswith(FINISHED):
                continue
            try:
                if due_in_window(schedule_of(row), frequency, ld, row.runs_before):
                    due.append(row.harvest_id)
            except (ScheduleError, ValueError, OverflowError) as exc:
                deactivate(conn, row.harvest_id, f"scheduling failed: {exc}")
    log.info("%s run at %s: %d definition(s) due: %s", frequency, ld, len(due), due)
    return due


def ensure_run(
    conn: Connection, harvest_id: int, logical_date: datetime, *, oneoff: bool = False
) -> tuple[int, bool]:
    """(harvest_num, created) of the run of ``harvest_id`` at ``logical_date``.

    Serialised per definition by a transaction-scoped advisory lock, so two concurrent tasks
    cannot allocate two numbers for the same run. ``oneoff`` marks an engineer's extra run,
    which the schedule's repeat count leaves out (a mark once set stays).
    """
    ld = as_utc(logical_date)
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(4242, :h)"), {"h": harvest_id})
    num = conn.execute(
        sa.text("SELECT harvest_num FROM harvest_runs WHERE harvest_id = :h AND logical_date = :d"),
        {"h": harvest_id, "d": ld},
    ).scalar()
    if num is not None:
        if oneoff:
            conn.execute(
                sa.text(
                    "UPDATE harvest_runs SET oneoff = true"
                    " WHERE harvest_id = :h AND logical_date = :d"
                ),
                {"h": harvest_id, "d": ld},
            )
        return int(num), False
    num = conn.execute(
        sa.text(
            "INSERT INTO harvest_runs (harvest_id, logical_date, harvest_num, oneoff)"
            " SELECT :h, :d, GREATEST(COALESCE(max(r.harvest_num), 0),"
            "  (SELECT numevents FROM harvestdefinitions WHERE harvest_id = :h)) + 1, :o"
            " FROM harvest_runs r WHERE r.harvest_id = :h RETURNING harvest_num"
        ),
        {"h": harvest_id, "d": ld, "o": oneoff},
    ).scalar_one()
    return int(num), True


def close_run(
    conn: Connection, harvest_id: int, logical_date: datetime, *, oneoff: bool = False
) -> int | None:
    """Mark the run at ``logical_date`` finished (once); its harvest_num, None if no run.

    ``oneoff`` also marks it an extra run, left out of the schedule's repeat count.
    """
    num = conn.execute(
        sa.text(
            "UPDATE harvest_runs SET advanced_at = COALESCE(advanced_at, now()),"
            " oneoff = oneoff OR :o WHERE harvest_id = :h AND logical_date = :d"
            " RETURNING harvest_num"
        ),
        {"h": harvest_id, "d": as_utc(logical_date), "o": oneoff},
    ).scalar()
    return None if num is None else int(num)


def advance_schedule(
    harvest_id: int, logical_date: datetime, engine: Engine | None = None
) -> dict[str, Any]:
    """After a run: run counter and next date of the definition (idempotent).

    The next date only moves forward (a backfill of an old date does not pull it back); a
    selective definition whose schedule is over is deactivated with that reason, one whose
    schedule cannot be evaluated with the error.
    """
    engine = engine_or_default(engine)
    ld = as_utc(logical_date)
    with engine.begin() as conn:
        num = close_run(conn, harvest_id, ld)
        runs = conn.execute(
            sa.text("SELECT count(*) FROM harvest_runs WHERE harvest_id = :h AND NOT oneoff"),
            {"h": harvest_id},
        ).scalar_one()
        conn.execute(
            sa.text(
                "UPDATE harvestdefinitions SET numevents = GREATEST(numevents, :n)"
                " WHERE harvest_id = :h"
            ),
            {"h": harvest_id, "n": int(num or 0)},
        )
        row = conn.execute(
            sa.text(
                "SELECT p.frequency, p.nextdate, " + SCHEDULE_COLUMNS + " FROM partialharvests p"
                " JOIN schedules s USING (schedule_id) WHERE p.harvest_id = :h"
            ),
            {"h": harvest_id},
        ).first()
        result: dict[str, Any] = {"harvest_id": harvest_id, "harvest_num": num, "runs": runs}
        if num is None:
            # no run at this date (its job generation failed and deactivated it): nothing to
            # count, and its next date stays where it was
            return result | {"next_date": None, "skipped": "no run at this date"}
        if row is None or row.frequency is None:
            return result | {"next_date": None}
        try:
            nxt = next_date(schedule_of(row), row.frequency, ld, int(runs))
        except (ScheduleError, ValueError, OverflowError) as exc:
            deactivate(conn, harvest_id, f"scheduling failed: {exc}")
            return result | {"next_date": None, "deactivated": str(exc)}
        if nxt is None:
            deactivate(conn, harvest_id, f"{FINISHED} after {runs} run(s)")
            return result | {"next_date": None, "deactivated": "schedule finished"}
        conn.execute(
            sa.text(
                "UPDATE partialharvests SET nextdate = GREATEST(COALESCE(nextdate, :n), :n)"
                " WHERE harvest_id = :h"
            ),
            {"h": harvest_id, "n": nxt},
        )
        return result | {"next_date": max(nxt, as_utc(row.nextdate) if row.nextdate else nxt)}


def definition_names(conn: Connection, harvest_ids: Iterable[int]) -> dict[int, str]:
    """Harvest definition id → name (for other stages' listings; unknown ids are left out)."""
    rows = conn.execute(
        sa.text("SELECT harvest_id, name FROM harvestdefinitions WHERE harvest_id = ANY(:h)"),
        {"h": sorted({int(h) for h in harvest_ids})},
    )
    return {int(h): str(n) for h, n in rows}


def definition_labels(conn: Connection, harvest_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """Harvest definition id → (name, kind: 'partial' selective or 'full' broad)."""
    rows = conn.execute(
        sa.text("SELECT harvest_id, name, kind FROM harvestdefinitions WHERE harvest_id = ANY(:h)"),
        {"h": sorted({int(h) for h in harvest_ids})},
    )
    return {int(h): (str(n), str(k)) for h, n, k in rows}
