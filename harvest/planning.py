"""Turning a due harvest definition into jobs rows: ``generate_jobs``.

Why the shape: a DAG task may be retried or a whole run re-run; the run of (definition,
logical date) gets its number once (``harvest_runs``) and its jobs are written in the same
transaction as the run's ``job_count``, so a re-run returns the same job ids and a crash in the
middle leaves nothing half-written. A job freezes its template (with the configurations'
attribute overrides), its seed list and its crawler traps (global + domains + definition).
Configurations that would crawl nothing (zero budget, no active seed) are left out and
counted in the run's log (:mod:`harvest.jobgen.skip`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import as_utc, engine_or_default, harvest_settings
from harvest.definitions import deactivate, ensure_run
from harvest.jobgen import default as default_generator
from harvest.jobgen import fixed as fixed_generator
from harvest.jobgen.model import HarvestLimits, JobGenSettings, JobPlan
from harvest.jobgen.skip import SkipCounts, active_seeds, zero_budget
from harvest.jobgen.source import count_configs, definition_limits, stream_configs
from harvestflow.formats.job_status import JobStatus
from harvestflow.progress import Progress
from harvestflow.settings import get_settings

log = logging.getLogger(__name__)

GENERATORS = {"default": default_generator.generate, "fixed": fixed_generator.generate}
# a lost database connection says nothing about the definition: the task fails and is retried
TRANSIENT_ERRORS = (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.DisconnectionError)


def global_crawler_traps(conn: Connection) -> list[str]:
    return list(
        conn.execute(
            sa.text(
                "SELECT DISTINCT e.trap_expression FROM global_crawler_trap_expressions e"
                " JOIN global_crawler_trap_lists l ON l.id = e.crawler_trap_list_id"
                " WHERE l.isactive ORDER BY 1"
            )
        ).scalars()
    )


def _template_specs(conn: Connection) -> dict[str, dict[str, Any]]:
    return {r.name: dict(r.spec) for r in conn.execute(sa.text("SELECT name, spec FROM templates"))}


def _definition(conn: Connection, harvest_id: int) -> Any:
    row = conn.execute(
        sa.text(
            "SELECT h.harvest_id, h.name, h.kind, h.crawlertraps, h.resolve, c.name AS channel,"
            " f.maxjobrunningtime FROM harvestdefinitions h"
            " LEFT JOIN harvestchannel c ON c.id = h.channel_id"
            " LEFT JOIN fullharvests f USING (harvest_id) WHERE h.harvest_id = :h"
        ),
        {"h": harvest_id},
    ).first()
    if row is None:
        raise LookupError(f"harvest definition {harvest_id} does not exist")
    return row


def _existing_jobs(conn: Connection, harvest_id: int, harvest_num: int) -> list[int]:
    """The run's jobs; a resubmitted job is replaced by the job it was resubmitted as."""
    return [
        int(j)
        for j in conn.execute(
            sa.text(
                "SELECT job_id FROM jobs WHERE harvest_id = :h AND harvest_num = :n"
                " AND status <> :r ORDER BY job_index"
            ),
            {"h": harvest_id, "n": harvest_num, "r": JobStatus.RESUBMITTED},
        ).scalars()
    ]


def _insert_job(
    conn: Connection,
    definition: Any,
    harvest_num: int,
    job_index: int,
    plan: JobPlan,
    limits: HarvestLimits,
    templates: dict[str, dict[str, Any]],
    traps: list[str],
    logical_date: datetime,
    skipped: SkipCounts,
) -> int | None:
    """Write the planned job; None when none of its configurations has an active seed.

    Configurations without an active seed are left out here (counted in ``skipped``), where
    the job's seed lists are read anyway: checking them while streaming would add a join over
    every seed list to the snapshot query.
    """
    seeds_rows = conn.execute(
        sa.text(
            # driven by the id list (index lookups), not a scan of every seed list
            "SELECT cs.config_id, s.seeds, d.crawlertraps"
            " FROM unnest(CAST(:ids AS integer[])) AS u(config_id)"
            " JOIN config_seedlists cs ON cs.config_id = u.config_id"
            " JOIN seedlists s USING (seedlist_id) JOIN domains d ON d.domain_id = s.domain_id"
            " ORDER BY cs.config_id, s.seedlist_id"
        ),
        {"ids": plan.config_ids},
    ).all()
    row_seeds = [(row, active_seeds(row.seeds)) for row in seeds_rows]
    seeded = {row.config_id for row, active in row_seeds if active}
    ids = [cid for cid in plan.config_ids if cid in seeded]
    skipped.no_active_seeds += len(plan.config_ids) - len(ids)
    if not ids:
        return None
    seeds: dict[str, None] = {}
    job_traps: dict[str, None] = dict.fromkeys(traps)
    for row, active in row_seeds:
        if row.config_id in seeded:
            seeds.update(dict.fromkeys(active))
            job_traps.update(dict.fromkeys(row.crawlertraps or ()))
    template = dict(templates[plan.template])
    template.update(json.loads(plan.attributes))
    template["name"] = plan.template
    channel = (
        definition.channel
        or (
            harvest_settings()[
                "low_priority_channel" if limits.snapshot else "high_priority_channel"
            ]
        )
    )
    job_id = conn.execute(
        sa.text(
            "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel, snapshot,"
            " template_name, template, seedlist, crawlertraps, forcemaxobjects, forcemaxbytes,"
            " forcemaxrunningtime, num_configs, resolve, logical_date) VALUES (:h, :n, :i, :st,"
            " :ch, :snap, :tn, CAST(:t AS jsonb), :seeds, CAST(:traps AS text[]), :mo, :mb,"
            " :mt, :nc,"
            " CAST(:r AS jsonb), :ld) ON CONFLICT (harvest_id, harvest_num, job_index)"
            " DO UPDATE SET edition = jobs.edition RETURNING job_id"
        ),
        {
            "h": definition.harvest_id,
            "n": harvest_num,
            "i": job_index,
            "st": JobStatus.NEW,
            "ch": channel,
            "snap": limits.snapshot,
            "tn": plan.template,
            "t": json.dumps(template, sort_keys=True),
            "seeds": "\n".join(seeds),
            "traps": list(job_traps),
            "mo": limits.max_objects,
            "mb": limits.max_bytes,
            "mt": int(definition.maxjobrunningtime or 0),
            "nc": len(ids),
            "r": json.dumps(dict(definition.resolve or {}), sort_keys=True),
            "ld": logical_date,
        },
    ).scalar_one()
    conn.execute(
        sa.text(
            "INSERT INTO job_configs (job_id, config_id) SELECT :j, unnest(CAST(:c AS integer[]))"
            " ON CONFLICT DO NOTHING"
        ),
        {"j": job_id, "c": ids},
    )
    return int(job_id)


def plan_jobs(
    conn: Connection,
    harvest_id: int,
    *,
    generator: str = "default",
    settings: JobGenSettings | None = None,
    progress_interval_s: float | None = None,
    as_of: datetime | None = None,
    skipped: SkipCounts | None = None,
) -> Iterator[JobPlan]:
    """The job plans of a definition, streamed (nothing is written).

    ``as_of``: the run's logical date, at which a snapshot's aliases are judged (None: now).
    Configurations with a zero object or byte budget are left out (counted in ``skipped``).
    """
    skipped = skipped if skipped is not None else SkipCounts()
    settings = settings or JobGenSettings.from_settings()
    _, limits, _ = definition_limits(conn, harvest_id)
    interval = progress_interval_s or float(get_settings()["airflow"]["progress_interval_s"])
    total = count_configs(conn, harvest_id, as_of=as_of)
    progress = Progress(
        f"job generation (definition {harvest_id})",
        total,
        interval_s=interval,
        unit="configurations",
    )

    def counted() -> Iterator[Any]:
        pending = 0
        for config in stream_configs(conn, harvest_id, as_of=as_of):
            pending += 1
            if pending == 1000:  # progress by batches: a call per row costs more than the row
                progress.advance(pending)
                pending = 0
            if zero_budget(config, limits):
                skipped.zero_budget += 1
                continue
            yield config
        progress.advance(pending)

    try:
        yield from GENERATORS[generator](counted(), limits, settings)
    finally:
        progress.close()


def generate_jobs(
    harvest_id: int,
    logical_date: datetime,
    engine: Engine | None = None,
    *,
    generator: str | None = None,
    settings: JobGenSettings | None = None,
) -> list[int]:
    """Jobs (status NEW) of the run of ``harvest_id`` at ``logical_date``; idempotent.

    A re-run of the same (definition, logical date) returns the same job ids. ``generator`` is
    "default" (size expectations) or "fixed" (fixed domain count); None: [jobgen] generator.
    """
    generator = generator or str(get_settings()["jobgen"].get("generator", "default"))
    if generator not in GENERATORS:
        raise ValueError(f"unknown job generator {generator!r}; expected one of {list(GENERATORS)}")
    engine = engine_or_default(engine)
    ld = as_utc(logical_date)
    with engine.begin() as conn:
        harvest_num, _created = ensure_run(conn, harvest_id, ld)
        done = conn.execute(
            sa.text(
                "SELECT job_count FROM harvest_runs WHERE harvest_id = :h AND logical_date = :d"
            ),
            {"h": harvest_id, "d": ld},
        ).scalar()
        if done is not None:
            jobs = _existing_jobs(conn, harvest_id, harvest_num)
            log.info(
                "definition %s run %s (%s): %d job(s) already generated",
                harvest_id,
                harvest_num,
                ld,
                len(jobs),
            )
            return jobs
        definition = _definition(conn, harvest_id)
        _, limits, _ = definition_limits(conn, harvest_id)
        templates = _template_specs(conn)
        traps = sorted(set(global_crawler_traps(conn)) | set(definition.crawlertraps or ()))
        jobs = []
        skipped = SkipCounts()
        plans = plan_jobs(
            conn, harvest_id, generator=generator, settings=settings, as_of=ld, skipped=skipped
        )
        for plan in plans:
            job_id = _insert_job(
                conn,
                definition,
                harvest_num,
                len(jobs),
                plan,
                limits,
                templates,
                traps,
                ld,
                skipped,
            )
            if job_id is not None:
                jobs.append(job_id)
        skipped.log_summary(harvest_id, harvest_num)
        conn.execute(
            sa.text(
                "UPDATE harvest_runs SET job_count = :c, generated_at = now()"
                " WHERE harvest_id = :h AND logical_date = :d"
            ),
            {"c": len(jobs), "h": harvest_id, "d": ld},
        )
    log.info(
        "definition %s (%s) run %s at %s: %d job(s) generated",
        harvest_id,
        definition.name,
        harvest_num,
        ld,
        len(jobs),
    )
    return jobs


def generate_due_jobs(
    harvest_ids: list[int],
    logical_date: datetime,
    engine: Engine | None = None,
    *,
    generator: str | None = None,
) -> dict[str, Any]:
    """Jobs of every due definition of a run; returns {jobs, deactivated: {id: reason}}.

    Why: as NetarchiveSuite's scheduler, a definition whose job generation fails is deactivated
    with the reason (shown by ``harvestflow definitions list``) and the other definitions of the
    run go on; it stays out of later runs until an engineer reactivates it. A lost database
    connection is not the definition's fault: it is raised (the task fails and is retried), and
    so is an unknown generator setting (it would fail every definition alike).
    """
    generator = generator or str(get_settings()["jobgen"].get("generator", "default"))
    if generator not in GENERATORS:
        raise ValueError(f"unknown job generator {generator!r}; expected one of {list(GENERATORS)}")
    engine = engine_or_default(engine)
    jobs: list[int] = []
    deactivated: dict[int, str] = {}
    for harvest_id in harvest_ids:
        try:
            jobs.extend(generate_jobs(harvest_id, logical_date, engine, generator=generator))
        except TRANSIENT_ERRORS:
            raise
        except Exception as exc:
            reason = f"scheduling failed: job generation: {exc.__class__.__name__}: {exc}"
            log.exception("definition %s: job generation failed", harvest_id)
            with engine.begin() as conn:
                deactivate(conn, harvest_id, reason[:2000])
            deactivated[harvest_id] = reason
    return {"jobs": jobs, "deactivated": deactivated}
