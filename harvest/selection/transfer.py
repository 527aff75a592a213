"""Transfer of active selection records into domains, configurations and definitions.

Why a full recompute: the harvest database must say exactly what the active records say. For
the records concerned (all, or one DAG frequency) the seeds of each (domain, configuration) are
the union of its active records' URLs, and each selection definition holds exactly the
configurations of its active records; inactive records are therefore not transferred, and a
record made inactive leaves its definition at the next transfer. Everything is UPSERTs, so a
retried task repeats nothing.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import as_utc, engine_or_default
from harvest.definitions import ensure_schedule, ensure_selective_definition, set_configs
from harvest.domains import ensure_config, registrable_domain
from harvest.schedule import DAILY, MONTHLY, WEEKLY
from harvest.selection.mapping import SelectionMapping, load_mapping
from harvest.selection.records import parse_feed_date

log = logging.getLogger(__name__)

AUDIENCE = "selection"  # marks the definitions this module manages
_DAG_UNITS = {
    "daily": (DAILY, 1),
    "weekly": (WEEKLY, 1),
    "monthly": (MONTHLY, 1),
    "semiannual": (MONTHLY, 6),
    "annual": (MONTHLY, 12),
}


def _anchor(row: Any, mapping: SelectionMapping) -> tuple[datetime | None, datetime | None]:
    """(start, end) of a record's own schedule; (None, None) = its DAG's ticks."""
    start = end = None
    if row.schedules:
        first = row.schedules[0]
        where = f"selection record {row.record_id}"
        start = parse_feed_date(first.get("startDate"), where)
        end = parse_feed_date(first.get("endDate"), where)
    if start is None and mapping.every_months(row.frequency):
        # every N months without a start date: counted from the record's creation day
        created = as_utc(row.created_at)
        start = created.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, end


def _definition_for(
    conn: Connection, row: Any, mapping: SelectionMapping, cache: dict[str, int]
) -> tuple[str, int]:
    dag = mapping.dag_frequency(row.frequency)
    start, end = _anchor(row, mapping)
    name = f"{mapping.definition_prefix(row.collection)}-{dag}"
    if mapping.every_months(row.frequency):
        name += f"-every{mapping.every_months(row.frequency)}m"
    if start is not None:
        name += f"-{start:%Y%m%d%H%M}"
    if name in cache:
        return name, cache[name]
    schedule = None
    if start is not None:
        unit, every = _DAG_UNITS[dag]
        months = mapping.every_months(row.frequency)
        if months:
            unit, every = MONTHLY, months
        schedule = ensure_schedule(
            conn,
            f"sel-{name}",
            timeunit=unit,
            numtimeunits=every,
            startdate=start,
            enddate=end,
            comments=f"schedule of selection definition {name}",
        )
        schedule_name: str | None = f"sel-{name}"
    else:
        schedule_name = None
    hid = ensure_selective_definition(
        conn,
        name,
        frequency=dag,
        schedule=schedule_name,
        comments=f"curators' selection: collection {row.collection}, {row.frequency}",
        audience=AUDIENCE,
    )
    log.debug("definition %s (id %s, schedule %s)", name, hid, schedule)
    cache[name] = hid
    return name, hid


def transfer_selection_records(
    frequency: str | None = None,
    engine: Engine | None = None,
    *,
    mapping: SelectionMapping | None = None,
) -> dict[str, Any]:
    """Transfer the active records (of one DAG frequency, or all); returns counts and ids."""
    mapping = mapping or load_mapping()
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(4243, 0)"))  # one transfer at a time
        rows = conn.execute(
            sa.text(
                "SELECT * FROM selection_records WHERE active"
                " AND COALESCE(validation_status, '') <> 'invalid' ORDER BY record_id"
            )
        ).all()
        rows = [
            r for r in rows if frequency is None or mapping.dag_frequency(r.frequency) == frequency
        ]
        seeds: dict[tuple[str, str], dict[str, None]] = defaultdict(dict)
        choices: dict[tuple[str, str], Any] = {}
        by_definition: dict[str, set[tuple[str, str]]] = defaultdict(set)
        cache: dict[str, int] = {}
        errors: list[str] = []
        for row in rows:
            try:
                choice = mapping.config_for(
                    row.budget, row.frequency, row.depth, ignore_robots=row.ignore_robots
                )
                name, _ = _definition_for(conn, row, mapping, cache)
            except (ValueError, KeyError) as exc:
                errors.append(f"record {row.record_id} ({row.seed_url}): {exc}")
                continue
            key = (registrable_domain(row.seed_url), choice.name)
            choices[key] = choice
            seeds[key].update(dict.fromkeys([row.seed_url, *(row.supplementary_urls or [])]))
            by_definition[name].add(key)
        config_ids: dict[tuple[str, str], int] = {}
        for key, choice in choices.items():
            ref = ensure_config(
                conn,
                key[0],
                config_name=choice.name,
                template=choice.template,
                seeds=list(seeds[key]),
                seedlist_name=choice.name,
                max_objects=choice.max_objects,
                max_bytes=choice.max_bytes,
                attributes=choice.attributes,
                make_default=False,
                comments="from curators' selection records",
            )
            config_ids[key] = ref.config_id
        for name, hid in cache.items():
            set_configs(conn, hid, [config_ids[k] for k in by_definition[name]], replace=True)
        # selection definitions of this frequency no active record points to any more
        stale = conn.execute(
            sa.text(
                "SELECT h.harvest_id, h.name FROM harvestdefinitions h JOIN partialharvests p"
                " USING (harvest_id) WHERE h.audience = :a"
                " AND (CAST(:f AS text) IS NULL OR p.frequency = :f)"
            ),
            {"a": AUDIENCE, "f": frequency},
        ).all()
        emptied = []
        for row in stale:
            if row.name not in cache:
                set_configs(conn, row.harvest_id, [], replace=True)
                emptied.append(row.name)
        conn.execute(
            sa.text(
                "UPDATE selection_records SET transferred_at = now()"
                " WHERE record_id = ANY(CAST(:ids AS integer[]))"
            ),
            {"ids": [r.record_id for r in rows]},
        )
    result = {
        "records": len(rows),
        "configurations": len(config_ids),
        "definitions": dict(sorted(cache.items())),
        "emptied": emptied,
        "errors": errors,
    }
    log.info(
        "selection transfer (%s): %d records -> %d configurations, %d definitions, %d emptied",
        frequency or "all",
        len(rows),
        len(config_ids),
        len(cache),
        len(emptied),
    )
    for error in errors:
        log.warning("selection transfer: %s", error)
    return result
