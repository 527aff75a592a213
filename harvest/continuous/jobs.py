"""Each bounded continuous run as a row of ``jobs``, so its WARCs reach the indexing chain.

Why a job row: the indexing chain takes in the WARCs of DONE jobs (``jobs.job_dir``), and QA,
preservation and the curators' job lists all start from jobs. Registering each run under one
"continuous" harvest definition (inactive: no planner ever schedules it) gives the run a job id
and harvest id, so its WARCs are named like every other job's (``<job>-<harvest>-...``) and the
chain's hourly sweep (or the Asset a finished harvest emits) indexes them permanently, while the
live index already serves them.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from harvestflow.formats.harvest_channels import Channel
from harvestflow.formats.job_status import JobStatus

DEFINITION = "continuous"


def definition_id(conn: sa.Connection) -> int:
    conn.execute(
        sa.text(
            "INSERT INTO harvestdefinitions (name, comments, kind, isactive, inactive_reason)"
            " VALUES (:n, 'continuous crawl runs (harvest/continuous)', 'partial', false,"
            " 'runs are registered by the continuous crawl, never planned')"
            " ON CONFLICT (name) DO NOTHING"
        ),
        {"n": DEFINITION},
    )
    return int(
        conn.execute(
            sa.text("SELECT harvest_id FROM harvestdefinitions WHERE name = :n"), {"n": DEFINITION}
        ).scalar_one()
    )


def register_run(
    engine: sa.Engine, run_id: str, started: dt.datetime, seeds: list[str], template: dict[str, Any]
) -> tuple[int, int]:
    """(job_id, harvest_id) of a new STARTED job for the run (idempotent per run id)."""
    start = dt.datetime.strptime(run_id[:14], "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC)
    minutes = int((start - dt.datetime(2020, 1, 1, tzinfo=dt.UTC)).total_seconds() // 60)
    harvest_num = minutes
    job_index = start.second * 1_000_000 + int(run_id[14:20] or 0)
    with engine.begin() as conn:
        harvest_id = definition_id(conn)
        job_id = conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                " template_name, template, seedlist, startdate, submitteddate)"
                " VALUES (:h, :n, :i, :st, :ch, 'continuous', CAST(:t AS jsonb), :s,"
                " :d, :d) ON CONFLICT (harvest_id, harvest_num, job_index)"
                " DO UPDATE SET status = EXCLUDED.status RETURNING job_id"
            ),
            {
                "h": harvest_id,
                "n": harvest_num,
                "i": job_index,
                "st": JobStatus.STARTED,
                "ch": Channel.CONTINUOUS.value,
                "t": json.dumps(template),
                "s": "\n".join(seeds),
                "d": started,
            },
        ).scalar_one()
    return int(job_id), harvest_id


def finish_run(engine: sa.Engine, job_id: int, job_dir: Path, ok: bool) -> None:
    """DONE with its directory (the chain takes its WARCs in), or FAILED."""
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = :st, enddate = now(), job_dir = :d WHERE job_id = :j"
            ),
            {"st": JobStatus.DONE if ok else JobStatus.FAILED, "d": str(job_dir), "j": job_id},
        )
