"""One-off harvests triggered by an engineer: of a definition, or of a list of seeds.

Why: an engineer must be able to harvest now — an event site, a seed list handed over by a
curator — from the Airflow UI's trigger form. The form's values are checked here (clear errors
naming the field) so the DAG stays a table of contents. A seed-list harvest becomes a selective
definition without frequency (never due on a schedule), one configuration per domain, named
after the run so that re-running the same DAG run finds the same definition.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvest.common import as_utc, engine_or_default
from harvest.definitions import (
    advance_schedule,
    close_run,
    collections_of,
    ensure_run,
    ensure_selective_definition,
    set_collections,
)
from harvest.domains import ensure_config
from harvest.errors import HarvestError
from harvest.selection.records import RecordError, normalise_url
from harvestflow.formats.domains import registrable_domain

log = logging.getLogger(__name__)

# JSON schema of the trigger form (Airflow Params): either a definition or seeds + template.
PARAMS_SCHEMA: dict[str, Any] = {
    "harvest_id": {
        "type": ["null", "integer"],
        "minimum": 1,
        "description": "an existing harvest definition to harvest now",
    },
    "seeds": {
        "type": ["null", "array"],
        "items": {"type": "string"},
        "description": "or: seed URLs, one per line",
    },
    "template": {
        "type": "string",
        "default": "default_selective",
        "description": "crawl template for a seed list (config/templates/)",
    },
    "max_objects": {
        "type": "integer",
        "default": -1,
        "minimum": -1,
        "description": "per-domain object limit (-1 unlimited)",
    },
    "max_bytes": {
        "type": "integer",
        "default": 1_000_000_000,
        "minimum": -1,
        "description": "per-domain byte limit (-1 unlimited)",
    },
}


class OneOffError(HarvestError, ValueError):
    """Trigger-form values that cannot be used, naming the field."""


@dataclass(frozen=True)
class OneOffRequest:
    harvest_id: int | None
    seeds: tuple[str, ...]
    template: str
    max_objects: int
    max_bytes: int


def validate_params(params: dict[str, Any], engine: Engine | None = None) -> OneOffRequest:
    """Check the trigger form: a known active definition, or valid seeds and a known template."""
    engine = engine_or_default(engine)
    hid = params.get("harvest_id")
    raw_seeds = params.get("seeds") or []
    if isinstance(raw_seeds, str):
        raw_seeds = raw_seeds.splitlines()
    template = str(params.get("template") or "default_selective")
    try:
        max_objects = int(params.get("max_objects", -1))
        max_bytes = int(params.get("max_bytes", 1_000_000_000))
    except (TypeError, ValueError) as exc:
        raise OneOffError(f"max_objects/max_bytes: not a number ({exc})") from None
    if max_objects < -1 or max_bytes < -1 or 0 in (max_objects, max_bytes):
        # 0 would crawl nothing: job generation leaves such configurations out
        raise OneOffError("max_objects/max_bytes: -1 (unlimited) or a positive number")
    if bool(hid) == bool([s for s in raw_seeds if str(s).strip()]):
        raise OneOffError("give either harvest_id or seeds, not both and not neither")
    with engine.connect() as conn:
        if hid:
            row = conn.execute(
                sa.text("SELECT name, isactive FROM harvestdefinitions WHERE harvest_id = :h"),
                {"h": int(hid)},
            ).first()
            if row is None:
                raise OneOffError(f"harvest_id: no harvest definition {hid}")
            return OneOffRequest(int(hid), (), template, max_objects, max_bytes)
        known = conn.execute(sa.text("SELECT 1 FROM templates WHERE name = :n"), {"n": template})
        if known.first() is None:
            raise OneOffError(f"template: unknown template {template!r}")
    seeds = []
    for i, raw in enumerate(raw_seeds, 1):
        if not str(raw).strip():
            continue
        try:
            seeds.append(normalise_url(str(raw), f"seeds line {i}"))
        except RecordError as exc:
            raise OneOffError(str(exc)) from None
    return OneOffRequest(None, tuple(dict.fromkeys(seeds)), template, max_objects, max_bytes)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:80] or "run"


def create_seedlist_harvest(
    seeds: list[str],
    template: str,
    run_name: str,
    *,
    max_objects: int = -1,
    max_bytes: int = 1_000_000_000,
    resolve: dict[str, str] | None = None,
    engine: Engine | None = None,
) -> int:
    """A one-off selective definition for ``seeds`` (idempotent per ``run_name``)."""
    request = validate_params(
        {"seeds": seeds, "template": template, "max_objects": max_objects, "max_bytes": max_bytes},
        engine,
    )
    engine = engine_or_default(engine)
    name = f"oneoff-{_slug(run_name)}"
    by_domain: dict[str, list[str]] = defaultdict(list)
    for seed in request.seeds:
        by_domain[registrable_domain(seed)].append(seed)
    with engine.begin() as conn:
        config_ids = [
            ensure_config(
                conn,
                domain,
                config_name=name,
                template=request.template,
                seeds=domain_seeds,
                seedlist_name=name,
                max_objects=request.max_objects,
                max_bytes=request.max_bytes,
                make_default=False,
                comments=f"one-off harvest {run_name}",
            ).config_id
            for domain, domain_seeds in sorted(by_domain.items())
        ]
        hid = ensure_selective_definition(
            conn,
            name,
            frequency=None,
            config_ids=config_ids,
            resolve=resolve,
            comments=f"one-off harvest of {len(request.seeds)} seed(s), run {run_name}",
            audience="oneoff",
            replace_configs=True,
        )
    log.info(
        "one-off definition %s (id %s): %d seeds, %d domains, template %s",
        name,
        hid,
        len(request.seeds),
        len(by_domain),
        template,
    )
    return hid


def start_oneoff(harvest_id: int, logical_date: datetime, engine: Engine | None = None) -> int:
    """Open the one-off run of an existing definition (its harvest number), marked one-off.

    Why before job generation: from then on the run is in ``harvest_runs``, and a scheduled
    run evaluated meanwhile must already see it as an extra run, not as one of its repeats.
    """
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        num, _created = ensure_run(conn, harvest_id, as_utc(logical_date), oneoff=True)
    return num


def finish_oneoff(
    harvest_id: int, logical_date: datetime, engine: Engine | None = None
) -> dict[str, Any]:
    """After a one-off run: close the run without moving the definition's schedule.

    Why: a one-off of a scheduled definition is an extra run, not one of its schedule's events
    (NetarchiveSuite's ``numEvents`` and next date belong to the schedule). Advancing it would
    skip the next scheduled harvest and bring ``maxrepeats`` closer. Only the run is marked
    finished; the run counter and next date are left alone. A definition without a schedule
    (a seed-list one-off, a snapshot) has no next date, so it is advanced as usual (counter).
    """
    engine = engine_or_default(engine)
    ld = as_utc(logical_date)
    with engine.begin() as conn:
        scheduled = conn.execute(
            sa.text(
                "SELECT p.frequency IS NOT NULL FROM partialharvests p WHERE p.harvest_id = :h"
            ),
            {"h": harvest_id},
        ).scalar()
        num = None
        if scheduled:
            num = close_run(conn, harvest_id, ld, oneoff=True)
    if not scheduled:
        return advance_schedule(harvest_id, ld, engine)
    log.info(
        "one-off run %s of scheduled definition %s at %s: its schedule is left as it was",
        num,
        harvest_id,
        ld,
    )
    return {"harvest_id": harvest_id, "harvest_num": num, "next_date": None, "oneoff": True}


@dataclass(frozen=True)
class PatchOrigin:
    """What a patch harvest takes from the job it patches."""

    job_id: int
    harvest_id: int  # the job's definition
    template: str
    resolve: dict[str, str]


def patch_origin(job_id: int, engine: Engine | None = None) -> PatchOrigin:
    """The job's definition, template and host resolution (OneOffError for an unknown job)."""
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        row = conn.execute(
            sa.text("SELECT harvest_id, template_name, resolve FROM jobs WHERE job_id = :j"),
            {"j": int(job_id)},
        ).first()
    if row is None:
        raise OneOffError(f"job: no job {job_id}")
    return PatchOrigin(int(job_id), int(row[0]), str(row[1]), dict(row[2] or {}))


def create_patch_harvest(
    job_id: int, urls: list[str], run_name: str, engine: Engine | None = None
) -> tuple[int, PatchOrigin]:
    """A one-off definition harvesting ``urls`` (URLs missing from a job's captures) with the
    job's template and host resolution; returns its id and what it took from the job.

    Why a seed-list one-off: it is the existing way to harvest given URLs now (the
    ``oneoff_harvest`` DAG runs it like any definition); the link to the patched job, which
    puts its captures in that job's collections, is kept by access.
    """
    origin = patch_origin(job_id, engine)
    hid = create_seedlist_harvest(
        urls, origin.template, run_name, resolve=origin.resolve, engine=engine
    )
    with engine_or_default(engine).begin() as conn:  # the patched job's curators' too
        set_collections(conn, hid, collections_of(conn, origin.harvest_id) or [])
    return hid, origin
