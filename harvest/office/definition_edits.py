"""Harvest definitions made, edited, deactivated and reactivated by people, with their history.

Why here and not through :func:`harvest.definitions.ensure_selective_definition`: that UPSERT is
keyed by name for the transfer and one-offs, where a second call must find the first; a person
renames definitions and must never take over another one by typing its name. Each change is
one transaction that writes the definition, its schedule (its own row, ``definition-<id>``),
its configurations (one per domain of its seeds, ``definition-<id>``), a version in
``definition_history`` (who, when, the definition as it became) and an audit row. The form
carries the edition it was read at: a definition changed meanwhile is not overwritten.

The scheduled ones are harvested by the hourly DAG (``selective_harvest_hourly``), which reads
the database at each run: a change is picked up at the next hour, without a restart.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import as_utc, engine_or_default, harvest_settings, utcnow
from harvest.definitions import (
    SCHEDULE_COLUMNS,
    channel_id,
    schedule_id,
    schedule_of,
    set_collections,
    set_configs,
)
from harvest.domains import ensure_config
from harvest.office.definition_form import (
    DefinitionForm,
    OfficeError,
    checked_text,
    describe,
    parse_definition_form,
    schedule_fields,
)
from harvest.schedule import Schedule, ScheduleError, next_event
from harvest.templates import TemplateError, template_id
from harvestflow.audit import record_audit
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.integers import BIGINT_MAX, NumberError, parse_int

log = logging.getLogger(__name__)

AUDIENCE = "office"  # marks the definitions made here
SCHEDULED = "hourly"  # the DAG frequency of the schedules made here

_DEFINITION_SQL = (
    "SELECT h.harvest_id, h.name, h.comments, h.kind, h.audience, h.isactive, h.collections,"
    " h.inactive_reason, h.edition, h.numevents, p.frequency, p.nextdate, s.name AS schedule_name,"
    f" {SCHEDULE_COLUMNS} FROM harvestdefinitions h"
    " LEFT JOIN partialharvests p ON p.harvest_id = h.harvest_id"
    " LEFT JOIN schedules s ON s.schedule_id = p.schedule_id WHERE h.harvest_id = :h"
)


def _configurations(conn: Connection, harvest_id: int) -> list[Any]:
    return list(
        conn.execute(
            sa.text(
                "SELECT c.config_id, d.name AS domain, t.name AS template, c.maxobjects,"
                " c.maxbytes, (SELECT string_agg(s.seeds, E'\\n' ORDER BY s.seedlist_id)"
                "  FROM config_seedlists cs JOIN seedlists s USING (seedlist_id)"
                "  WHERE cs.config_id = c.config_id) AS seeds"
                " FROM harvest_configs hc JOIN configurations c USING (config_id)"
                " JOIN domains d ON d.domain_id = c.domain_id"
                " JOIN templates t ON t.template_id = c.template_id"
                " WHERE hc.harvest_id = :h ORDER BY d.name, c.config_id"
            ),
            {"h": harvest_id},
        )
    )


def read_definition(conn: Connection, harvest_id: int) -> dict[str, Any] | None:
    """A definition as the edit form and ``definitions show`` present it, or None."""
    row = conn.execute(sa.text(_DEFINITION_SQL), {"h": harvest_id}).first()
    if row is None:
        return None
    configs = _configurations(conn, harvest_id)
    seeds: dict[str, None] = {}
    for config in configs:
        seeds.update(
            dict.fromkeys(s.strip() for s in (config.seeds or "").splitlines() if s.strip())
        )
    own = row.schedule_name == f"definition-{harvest_id}"
    schedule = schedule_of(row) if own and row.frequency is not None else None
    return {
        "harvest_id": row.harvest_id,
        "name": row.name,
        "comments": row.comments or "",
        "collections": list(row.collections),
        "kind": row.kind,
        "audience": row.audience,
        "isactive": row.isactive,
        "inactive_reason": row.inactive_reason,
        "edition": int(row.edition),
        "numevents": row.numevents,
        "frequency": row.frequency,
        "nextdate": row.nextdate,
        "schedule": schedule,
        "schedule_text": describe(schedule) if own or row.frequency is None else
        f"{row.schedule_name} ({row.frequency} DAG)",
        "seeds": list(seeds),
        "domains": sorted({c.domain for c in configs}),
        "template": configs[0].template if configs else "default_selective",
        "max_objects": int(configs[0].maxobjects) if configs else -1,
        "max_bytes": int(configs[0].maxbytes) if configs else 1_000_000_000,
        "editable": editable_reason(row.kind, row.audience),
    }  # fmt: skip


def form_values(found: dict[str, Any]) -> dict[str, str]:
    """A definition read by :func:`read_definition` as the form's fields (the edit form, and
    the CLI's edit, which changes only the options given)."""
    return {
        "name": found["name"],
        "comments": found["comments"],
        "collection": found["collections"][0] if found["collections"] else "",
        "seeds": "\n".join(found["seeds"]),
        "template": found["template"],
        "max_objects": str(found["max_objects"]),
        "max_bytes": str(found["max_bytes"]),
        "edition": str(found["edition"]),
        **schedule_fields(found["schedule"]),
    }


def editable_reason(kind: str, audience: str | None) -> str | None:
    """Why a definition's content cannot be edited here (None: it can); any definition can be
    deactivated and reactivated."""
    if kind == "full":
        return "a snapshot definition is made by the broad crawl (harvestflow broad-crawl)"
    if audience == "selection":
        return "made from selection records by the transfer: edit its records (Selection)"
    return None


def _snapshot(conn: Connection, harvest_id: int) -> dict[str, Any]:
    """The definition as its history keeps it (JSON)."""
    found = read_definition(conn, harvest_id)
    assert found is not None
    keep = ("name", "comments", "collections", "isactive", "inactive_reason", "frequency",
            "seeds", "template", "max_objects", "max_bytes", "schedule_text", "nextdate")  # fmt: skip
    return {k: found[k] for k in keep}


def _record(conn: Connection, harvest_id: int, user: str, action: str) -> dict[str, Any]:
    snapshot = _snapshot(conn, harvest_id)
    edition = conn.execute(
        sa.text("SELECT edition FROM harvestdefinitions WHERE harvest_id = :h"), {"h": harvest_id}
    ).scalar_one()
    conn.execute(
        sa.text(
            "INSERT INTO definition_history (harvest_id, edition, changed_by, action, definition)"
            " VALUES (:h, :e, :u, :a, CAST(:d AS jsonb))"
        ),
        {"h": harvest_id, "e": edition, "u": user, "a": action,
         "d": json.dumps(snapshot, default=str, sort_keys=True)},
    )  # fmt: skip
    record_audit(
        conn, user, f"definition.{action}", f"definition {harvest_id}", {"after": snapshot}
    )
    log.info("definition %s %s by %s", harvest_id, action, user)
    return snapshot


def definition_history(conn: Connection, harvest_id: int, limit: int = 100) -> list[dict[str, Any]]:
    """The definition's versions, newest first: edition, who, when, action, the definition."""
    rows = conn.execute(
        sa.text(
            "SELECT edition, changed_at, changed_by, action, definition FROM definition_history"
            " WHERE harvest_id = :h ORDER BY change_id DESC LIMIT :n"
        ),
        {"h": harvest_id, "n": limit},
    )
    return [dict(r._mapping) for r in rows]


def _upsert_schedule(conn: Connection, harvest_id: int, schedule: Schedule) -> int:
    values = {
        "n": f"definition-{harvest_id}", "c": describe(schedule), "s": schedule.startdate,
        "e": schedule.enddate, "m": schedule.maxrepeats, "u": schedule.timeunit,
        "k": schedule.numtimeunits, "om": schedule.onminute, "oh": schedule.onhour,
        "ow": schedule.ondayofweek, "od": schedule.ondayofmonth, "cron": schedule.cron,
        "any": not schedule.pinned,
    }  # fmt: skip
    return int(
        conn.execute(
            sa.text(
                "INSERT INTO schedules (name, comments, startdate, enddate, maxrepeats, timeunit,"
                " numtimeunits, anytime, onminute, onhour, ondayofweek, ondayofmonth, cron)"
                " VALUES (:n, :c, :s, :e, :m, :u, :k, :any, :om, :oh, :ow, :od, :cron)"
                " ON CONFLICT (name) DO UPDATE SET comments = EXCLUDED.comments,"
                " startdate = EXCLUDED.startdate, enddate = EXCLUDED.enddate,"
                " maxrepeats = EXCLUDED.maxrepeats, timeunit = EXCLUDED.timeunit,"
                " numtimeunits = EXCLUDED.numtimeunits, anytime = EXCLUDED.anytime,"
                " onminute = EXCLUDED.onminute, onhour = EXCLUDED.onhour,"
                " ondayofweek = EXCLUDED.ondayofweek, ondayofmonth = EXCLUDED.ondayofmonth,"
                " cron = EXCLUDED.cron RETURNING schedule_id"
            ),
            values,
        ).scalar_one()
    )


def _write_content(conn: Connection, harvest_id: int, form: DefinitionForm, now: datetime) -> None:
    """The definition's schedule and configurations as the form says."""
    if form.schedule is None:  # a one-off: no DAG harvests it on a schedule
        sid, frequency, nxt = schedule_id(conn, "daily"), None, None
    else:
        sid, frequency = _upsert_schedule(conn, harvest_id, form.schedule), SCHEDULED
        nxt = next_event(form.schedule, now)
    conn.execute(
        sa.text(
            "INSERT INTO partialharvests (harvest_id, schedule_id, frequency, nextdate)"
            " VALUES (:h, :s, :f, :n) ON CONFLICT (harvest_id) DO UPDATE SET"
            " schedule_id = EXCLUDED.schedule_id, frequency = EXCLUDED.frequency,"
            " nextdate = EXCLUDED.nextdate"
        ),
        {"h": harvest_id, "s": sid, "f": frequency, "n": nxt},
    )
    by_domain: dict[str, list[str]] = defaultdict(list)
    for seed in form.seeds:
        by_domain[registrable_domain(seed)].append(seed)
    name = f"definition-{harvest_id}"
    config_ids = [
        ensure_config(
            conn, domain, config_name=name, template=form.template, seeds=seeds,
            seedlist_name=name, max_objects=form.max_objects, max_bytes=form.max_bytes,
            make_default=False, comments=f"harvest definition {form.name}",
        ).config_id
        for domain, seeds in sorted(by_domain.items())
    ]  # fmt: skip
    set_configs(conn, harvest_id, config_ids, replace=True)
    set_collections(conn, harvest_id, [form.collection] if form.collection else [])


def _check_name(conn: Connection, name: str, harvest_id: int | None) -> None:
    other = conn.execute(
        sa.text("SELECT harvest_id FROM harvestdefinitions WHERE name = :n"), {"n": name}
    ).scalar()
    if other is not None and other != harvest_id:
        raise OfficeError(f"name: definition {other} is already named {name!r}")


def _check_template(conn: Connection, name: str) -> None:
    try:
        template_id(conn, name)
    except TemplateError as exc:
        raise OfficeError(f"template: {exc}") from None


def _edition(values: Mapping[str, str]) -> int | None:
    raw = str(values.get("edition") or "").strip()
    if not raw:
        return None
    try:
        return parse_int(raw, "edition", minimum=0, maximum=BIGINT_MAX)
    except NumberError as exc:
        raise OfficeError(str(exc)) from None


def save_definition(
    values: Mapping[str, str],
    user: str,
    harvest_id: int | None = None,
    *,
    engine: Engine | None = None,
    now: datetime | None = None,
) -> int:
    """Create (``harvest_id`` None) or edit a selective or one-off definition from a form's
    values; its id. :class:`OfficeError` names the field at fault; nothing is written then."""
    now = as_utc(now or utcnow())
    form = parse_definition_form(values, now)
    expected = _edition(values)
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        _check_template(conn, form.template)
        _check_name(conn, form.name, harvest_id)
        if harvest_id is None:
            channel = channel_id(conn, harvest_settings()["high_priority_channel"])
            harvest_id = int(
                conn.execute(
                    sa.text(
                        "INSERT INTO harvestdefinitions (name, comments, kind, channel_id,"
                        " audience) VALUES (:n, :c, 'partial', :ch, :a) RETURNING harvest_id"
                    ),
                    {"n": form.name, "c": form.comments, "ch": channel, "a": AUDIENCE},
                ).scalar_one()
            )
            action = "create"
        else:
            row = _locked(conn, harvest_id)
            reason = editable_reason(row.kind, row.audience)
            if reason:
                raise OfficeError(f"definition {harvest_id} cannot be edited here: {reason}")
            if expected is not None and expected != row.edition:
                raise OfficeError(
                    f"definition {harvest_id} was changed meanwhile (edition {row.edition},"
                    f" the form had {expected}): reload it and make your change again"
                )
            conn.execute(
                sa.text(
                    "UPDATE harvestdefinitions SET name = :n, comments = :c,"
                    " edition = edition + 1 WHERE harvest_id = :h"
                ),
                {"n": form.name, "c": form.comments, "h": harvest_id},
            )
            action = "edit"
        _write_content(conn, harvest_id, form, now)
        _record(conn, harvest_id, user, action)
    return harvest_id


def _locked(conn: Connection, harvest_id: int) -> Any:
    row = conn.execute(
        sa.text(
            "SELECT harvest_id, kind, audience, isactive, edition FROM harvestdefinitions"
            " WHERE harvest_id = :h FOR UPDATE"
        ),
        {"h": harvest_id},
    ).first()
    if row is None:
        raise OfficeError(f"no harvest definition {harvest_id}")
    return row


def set_active(
    harvest_id: int,
    active: bool,
    user: str,
    reason: str = "",
    *,
    engine: Engine | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Deactivate (with the person's reason) or reactivate a definition; the new version.

    Reactivating a definition that a scheduling error or the end of its schedule switched off
    first checks its schedule: one that still cannot be evaluated, or has no harvest left, is
    refused with what to change. Its next date is the schedule's next event from now.
    """
    now = as_utc(now or utcnow())
    reason = checked_text(reason, "reason", 500)
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        row = _locked(conn, harvest_id)
        if bool(row.isactive) == active:
            raise OfficeError(
                f"definition {harvest_id} is already {'active' if active else 'inactive'}"
            )
        if not active:
            why = f"deactivated by {user}" + (f": {reason}" if reason else "")
            conn.execute(
                sa.text(
                    "UPDATE harvestdefinitions SET isactive = false, inactive_reason = :r,"
                    " edition = edition + 1 WHERE harvest_id = :h"
                ),
                {"h": harvest_id, "r": why},
            )
            return _record(conn, harvest_id, user, "deactivate")
        sched = conn.execute(sa.text(_DEFINITION_SQL), {"h": harvest_id}).first()
        if sched is not None and sched.frequency is not None:
            conn.execute(
                sa.text("UPDATE partialharvests SET nextdate = :n WHERE harvest_id = :h"),
                {"h": harvest_id, "n": _reactivated_next(schedule_of(sched), now)},
            )
        conn.execute(
            sa.text(
                "UPDATE harvestdefinitions SET isactive = true, inactive_reason = NULL,"
                " edition = edition + 1 WHERE harvest_id = :h"
            ),
            {"h": harvest_id},
        )
        return _record(conn, harvest_id, user, "reactivate")


def _reactivated_next(schedule: Schedule, now: datetime) -> datetime | None:
    """The next date of a schedule being reactivated (None: its DAG's next tick)."""
    try:
        schedule.validate()
        if schedule.startdate is None and schedule.cron is None:
            return None
        nxt = next_event(schedule, now)
    except (ScheduleError, ValueError, OverflowError) as exc:
        raise OfficeError(f"schedule: {exc}: edit the schedule, then reactivate") from None
    if nxt is None:
        raise OfficeError(
            "schedule: no harvest left after now (its end date or repeat count is reached):"
            " edit the schedule, then reactivate"
        )
    return nxt
