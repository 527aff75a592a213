"""Transfer of active selection records into domains, configurations and definitions.

Why a full recompute: the harvest database must say exactly what the active records say. For
the records concerned (all, or one DAG frequency) the seeds of each (domain, configuration) are
the union of its active records' URLs, and each selection definition holds exactly the
configurations of its active records, and belongs to their collections (whose roles say who
may switch it off and on); inactive records are therefore not transferred, and a
record made inactive leaves its definition at the next transfer. Everything is UPSERTs, so a
retried task repeats nothing. First, in the same transaction, the pending directives of QA
comments (URLs to add, a raised budget) are applied to their records, once
(:func:`harvest.selection.qa_feedback.apply_directives`); a record's own limits replace the
mapping's for its configuration. In legal-deposit mode a record outside the national
domains without scope evidence is left out, named (:mod:`scope_gate`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import as_utc, engine_or_default
from harvest.definitions import (
    ensure_schedule,
    ensure_selective_definition,
    set_collections,
    set_configs,
)
from harvest.domains import ensure_config
from harvest.jobgen.model import max_inf
from harvest.schedule import DAILY, MONTHLY, WEEKLY
from harvest.selection import scope_gate
from harvest.selection.mapping import ConfigChoice, SelectionMapping, load_mapping
from harvest.selection.qa_feedback import apply_directives
from harvest.selection.records import parse_feed_date
from harvest.selection.watched import mark as mark_watched
from harvestflow.credentials import CredentialError, apply_feed_login
from harvestflow.formats.domains import registrable_domain

log = logging.getLogger(__name__)

AUDIENCE = "selection"  # marks the definitions this module manages
_DAG_UNITS = {
    "daily": (DAILY, 1),
    "weekly": (WEEKLY, 1),
    "monthly": (MONTHLY, 1),
    "semiannual": (MONTHLY, 6),
    "annual": (MONTHLY, 12),
}


Sched = tuple[str, datetime | None, datetime | None]  # (frequency, start, end)


def _with_budget(choice: ConfigChoice, row: Any, before: ConfigChoice | None) -> ConfigChoice:
    """The configuration's limits with the record's own (a QA directive raised them), and
    those of another record of the same configuration: the larger of each wins."""
    if row.max_objects is not None or row.max_bytes is not None:
        choice = replace(
            choice,
            max_objects=choice.max_objects if row.max_objects is None else row.max_objects,
            max_bytes=choice.max_bytes if row.max_bytes is None else row.max_bytes,
        )
    if before is not None:
        choice = replace(
            choice,
            max_objects=max_inf(choice.max_objects, before.max_objects),
            max_bytes=max_inf(choice.max_bytes, before.max_bytes),
        )
    return choice


def _schedules(row: Any, mapping: SelectionMapping) -> list[Sched]:
    """(frequency, start, end) of each of a record's schedules; start None = its DAG's ticks.

    A crawl-feed target may have several schedules (say daily during an event, then weekly):
    each one is harvested. A record without schedules has one, of its own frequency.
    """
    where = f"selection record {row.record_id}"
    found: list[Sched] = []
    for sched in row.schedules or [{"frequency": row.frequency}]:
        if str(sched.get("frequency") or "").upper() == "DOMAINCRAWL":
            continue  # the broad crawl's (records imported before these were left out)
        freq = mapping.normalise_frequency(str(sched.get("frequency") or row.frequency))
        start = parse_feed_date(sched.get("startDate"), where)
        end = parse_feed_date(sched.get("endDate"), where)
        if start is None and mapping.every_months(freq):
            # every N months without a start date: counted from the record's creation day
            created = as_utc(row.created_at)
            start = created.replace(hour=0, minute=0, second=0, microsecond=0)
        found.append((freq, start, end))
    return found


def _definition_for(
    conn: Connection,
    collection: str,
    sched: Sched,
    mapping: SelectionMapping,
    cache: dict[str, int],
) -> tuple[str, int]:
    freq, start, end = sched
    dag = mapping.dag_frequency(freq)
    months = mapping.every_months(freq)
    name = f"{mapping.definition_prefix(collection)}-{dag}"
    if months:
        name += f"-every{months}m"
    if start is not None:
        name += f"-{start:%Y%m%d%H%M}"
    if end is not None:  # targets with the same start but other ends must not share a schedule
        name += f"-until{end:%Y%m%d%H%M}"
    if name in cache:
        return name, cache[name]
    schedule = None
    if start is not None:
        unit, every = _DAG_UNITS[dag]
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
        comments=f"curators' selection: collection {collection}, {freq}",
        audience=AUDIENCE,
    )
    log.debug("definition %s (id %s, schedule %s)", name, hid, schedule)
    cache[name] = hid
    return name, hid


def _feed_logins(conn: Connection, rows: list[Any]) -> list[str]:
    """The crawl feed's login fields put on the credential each target's ``secretId`` names
    (its domain: the target's); what cannot be done is said, naming the record."""
    problems = []
    for row in rows:
        where = f"record {row.record_id} ({row.seed_url})"
        domain = registrable_domain(row.seed_url)
        if row.secret_id:
            try:
                applied = apply_feed_login(
                    conn, row.secret_id, domain, row.login_page_url, row.logout_url
                )
            except CredentialError as exc:
                problems.append(f"{where}: {exc}")
                continue
            if not applied:
                problems.append(
                    f"{where}: secretId {row.secret_id!r} names no stored credential; store it"
                    f" with `harvestflow credentials set {domain} --secret-id {row.secret_id}"
                    " --kind form --login-url URL --username NAME`"
                )
        elif row.login_page_url:
            problems.append(f"{where}: loginPageUrl without secretId: crawled without login")
    return problems


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
        # QA comments' directives first (URLs, budgets), so this transfer harvests them
        directives, errors = apply_directives(conn)
        rows = conn.execute(
            sa.text(
                "SELECT * FROM selection_records WHERE active"
                " AND COALESCE(validation_status, '') <> 'invalid' ORDER BY record_id"
            )
        ).all()
        seeds: dict[tuple[str, str], dict[str, None]] = defaultdict(dict)
        choices: dict[tuple[str, str], Any] = {}
        by_definition: dict[str, set[tuple[str, str]]] = defaultdict(set)
        collections: dict[str, set[str]] = defaultdict(set)  # whose roles say who may change it
        cache: dict[str, int] = {}
        concerned = []
        out_of_scope = scope_gate.refused(conn, rows, scope_gate.ScopeRule.from_settings())
        errors += out_of_scope.values()
        for row in rows:
            if row.record_id in out_of_scope:
                continue
            try:
                scheds = [
                    sched
                    for sched in _schedules(row, mapping)
                    if frequency is None or mapping.dag_frequency(sched[0]) == frequency
                ]
                planned = []
                for sched in scheds:
                    choice = mapping.config_for(
                        row.budget, sched[0], row.depth, ignore_robots=row.ignore_robots
                    )
                    name, _ = _definition_for(conn, row.collection, sched, mapping, cache)
                    planned.append((choice, name))
            except (ValueError, KeyError) as exc:
                errors.append(f"record {row.record_id} ({row.seed_url}): {exc}")
                continue
            if scheds:
                concerned.append(row)
            for choice, name in planned:
                key = (registrable_domain(row.seed_url), choice.name)
                before = choices.get(key)
                choices[key] = mark_watched(_with_budget(choice, row, before), row, before)
                seeds[key].update(dict.fromkeys([row.seed_url, *(row.supplementary_urls or [])]))
                by_definition[name].add(key)
                collections[name].add(row.collection)
        rows = concerned
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
            if collections[name]:
                set_collections(conn, hid, collections[name])
        errors += _feed_logins(conn, rows)
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
        "directives": directives,
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
