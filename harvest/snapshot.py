"""Snapshot (broad-crawl) definitions: step 1 with a per-domain budget, step 2 on limits.

Why two steps (NetarchiveSuite, the BnF): step 1 harvests every active domain with a small
budget (e.g. 10,000 URLs per domain) on the low-priority channel; step 2 re-harvests with a
higher budget only the domains that stopped on the harvest's limit in step 1 (stop reasons
OBJECT_LIMIT and SIZE_LIMIT: a domain that hit its own configuration's limit would stop there
again). Aliased domains are left out, as in NetarchiveSuite.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvest.common import engine_or_default
from harvest.definitions import ensure_snapshot_definition
from harvestflow.formats.stop_reasons import StopReason

log = logging.getLogger(__name__)

DEFAULT_STEP1_OBJECTS = 10_000
DEFAULT_STEP2_OBJECTS = 100_000


def create_snapshot_definition(
    name: str,
    *,
    max_objects: int = DEFAULT_STEP1_OBJECTS,
    max_bytes: int = -1,
    max_job_running_time_s: int = 0,
    previous_harvest_id: int | None = None,
    engine: Engine | None = None,
) -> int:
    """A snapshot definition (UPSERT by name); with ``previous_harvest_id`` a second step."""
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        return ensure_snapshot_definition(
            conn,
            name,
            max_objects=max_objects,
            max_bytes=max_bytes,
            max_job_running_time_s=max_job_running_time_s,
            previous_harvest_id=previous_harvest_id,
            comments=(
                f"snapshot step 2 of definition {previous_harvest_id}"
                if previous_harvest_id
                else "snapshot (broad crawl)"
            ),
        )


def create_step2_definition(
    step1_harvest_id: int,
    *,
    name: str | None = None,
    max_objects: int = DEFAULT_STEP2_OBJECTS,
    max_bytes: int = -1,
    engine: Engine | None = None,
) -> int:
    """The second step of ``step1_harvest_id`` (named ``<step 1 name>-step2`` by default)."""
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        step1 = conn.execute(
            sa.text("SELECT name, kind FROM harvestdefinitions WHERE harvest_id = :h"),
            {"h": step1_harvest_id},
        ).first()
    if step1 is None or step1.kind != "full":
        raise ValueError(f"harvest definition {step1_harvest_id} is not a snapshot definition")
    return create_snapshot_definition(
        name or f"{step1.name}-step2",
        max_objects=max_objects,
        max_bytes=max_bytes,
        previous_harvest_id=step1_harvest_id,
        engine=engine,
    )


def domains_for_step2(step1_harvest_id: int, engine: Engine | None = None) -> list[str]:
    """The domains a second step of ``step1_harvest_id`` would harvest (for reports)."""
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        return list(
            conn.execute(
                sa.text(
                    "SELECT DISTINCT d.name FROM historyinfo hi JOIN configurations c"
                    " USING (config_id) JOIN domains d USING (domain_id)"
                    " WHERE hi.harvest_id = :h AND hi.stopreason IN (:objects, :size) AND d.active"
                    " ORDER BY 1"
                ),
                {
                    "h": step1_harvest_id,
                    "objects": StopReason.OBJECT_LIMIT,
                    "size": StopReason.SIZE_LIMIT,
                },
            ).scalars()
        )
