"""Jobs after generation: the frozen job spec, status moves, listing.

Why ``prepare_job`` writes ``job.json`` once: the spec is the contract with the crawler and
what a curator reads to know what was asked; a retried task must find the same directory (same
launch timestamp) instead of starting a second crawl beside the first. Status only moves
forward (a trigger in sql/001 refuses the rest).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import (
    FAILED,
    NEW,
    STARTED,
    STATUS_NAMES,
    SUBMITTED,
    engine_or_default,
    utcnow,
)
from harvestflow.atomic import atomic_write_text
from harvestflow.credentials import refs_for_job

log = logging.getLogger(__name__)


def _job_row(conn: Connection, job_id: int, *, lock: bool = False) -> Any:
    row = conn.execute(
        sa.text(
            "SELECT j.*, h.name AS harvest_name FROM jobs j JOIN harvestdefinitions h"
            " USING (harvest_id) WHERE j.job_id = :j" + (" FOR UPDATE OF j" if lock else "")
        ),
        {"j": job_id},
    ).first()
    if row is None:
        raise LookupError(f"job {job_id} does not exist")
    return row


def job_domains(conn: Connection, job: Any) -> list[dict[str, Any]]:
    """Per-domain entries of the job spec: the configuration and its effective limits."""
    rows = conn.execute(
        sa.text(
            "SELECT d.name, c.config_id, c.maxobjects, c.maxbytes FROM job_configs jc"
            " JOIN configurations c USING (config_id) JOIN domains d USING (domain_id)"
            " WHERE jc.job_id = :j ORDER BY d.name, c.config_id"
        ),
        {"j": job.job_id},
    ).all()
    return [
        {
            "domain": r.name,
            "config_id": r.config_id,
            # the configuration's own limits: the harvest's go at job level, so that the crawler
            # can tell OBJECT_LIMIT/SIZE_LIMIT (harvest) from CONFIG_OBJECT/SIZE_LIMIT
            "max_objects": int(r.maxobjects),
            "max_bytes": int(r.maxbytes),
        }
        for r in rows
    ]


def build_spec(conn: Connection, job: Any, dedup_index: str | None = None) -> dict[str, Any]:
    """The job spec (job.json) of a jobs row: see the contract in the brief / ARCHITECTURE §4.

    Credentials of the job's domains are given by reference only (no secret in job.json): the
    crawler reads them decrypted at run time (harvestflow/credentials.py).
    """
    domains = job_domains(conn, job)
    credentials = refs_for_job(conn, job.harvest_id, [d["domain"] for d in domains])
    return {
        "job_id": job.job_id,
        "harvest_id": job.harvest_id,
        "harvest_name": job.harvest_name,
        "harvest_num": job.harvest_num,
        "channel": job.channel,
        "snapshot": job.snapshot,
        "seeds": [s for s in job.seedlist.splitlines() if s.strip()],
        "template": dict(job.template),
        "domains": domains,
        # the harvest's per-domain limits (NetarchiveSuite's forceMaxObjects/Bytes)
        "max_objects": int(job.forcemaxobjects),
        "max_bytes": int(job.forcemaxbytes),
        "max_running_time_s": int(job.forcemaxrunningtime or 0),
        "crawler_traps": list(job.crawlertraps or []),
        "resolve": dict(job.resolve or {}),
        "dedup_index": dedup_index,
        "warc_prefix": f"{job.job_id}-{job.harvest_id}",
        "credentials": [asdict(ref) for ref in credentials],
        # the crawler polls job_actions for operators' actions (crawler/control.py)
        "job_control": True,
    }


def job_dir_for(data_dir: Path, job: Any, launched: datetime) -> Path:
    stamp = launched.strftime("%Y%m%d%H%M%S")
    return Path(data_dir) / "jobs" / str(job.harvest_id) / str(job.job_id) / stamp


def current_job_id(conn: Connection, job_id: int) -> int:
    """The job that stands for ``job_id`` now: itself, or the job it was resubmitted as."""
    seen = {job_id}
    while True:
        nxt = conn.execute(
            sa.text("SELECT resubmitted_as_job FROM jobs WHERE job_id = :j"), {"j": job_id}
        ).scalar()
        if nxt is None or nxt in seen:
            return job_id
        seen.add(int(nxt))
        job_id = int(nxt)


def prepare_job(job_id: int, data_dir: str | Path, engine: Engine | None = None) -> str:
    """Write the frozen job spec and mark the job SUBMITTED; returns the job.json path.

    Idempotent: a job already prepared (SUBMITTED, STARTED, DONE) keeps its directory and spec,
    and the existing path is returned. A FAILED job being prepared again (its tasks re-run) is
    resubmitted first — status never moves back, so the retry is a new job linked by
    resubmitted-as — and the new job's spec is returned; :func:`mark_started` and
    :func:`harvest.results.record_job_results` follow that link, so a DAG holding the old id
    carries on with the new job.
    """
    from harvest.dedup_for_job import dedup_index_for_job
    from harvest.recovery import resubmit_job

    engine = engine_or_default(engine)
    with engine.connect() as conn:
        job_id = current_job_id(conn, job_id)
        status = conn.execute(
            sa.text("SELECT status FROM jobs WHERE job_id = :j"), {"j": job_id}
        ).scalar()
    if status == FAILED:
        job_id = resubmit_job(job_id, engine, reason="failed job prepared again (retry)")
    with engine.begin() as conn:
        job = _job_row(conn, job_id, lock=True)
        if job.status != NEW and job.job_dir:
            path = Path(job.job_dir) / "job.json"
            if path.exists():
                return str(path)
            log.warning("job %s: %s vanished, writing it again", job_id, path)
            directory = Path(job.job_dir)
        else:
            directory = job_dir_for(Path(data_dir), job, utcnow())
        directory.mkdir(parents=True, exist_ok=True)
        dedup = dedup_index_for_job(conn, job, directory)
        spec = build_spec(conn, job, dedup)
        path = directory / "job.json"
        atomic_write_text(path, json.dumps(spec, indent=1, sort_keys=False) + "\n")
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = GREATEST(status, :s), job_dir = :d, dedup_index = :x,"
                " submitteddate = COALESCE(submitteddate, now()) WHERE job_id = :j"
            ),
            {"s": SUBMITTED, "d": str(directory), "x": dedup, "j": job_id},
        )
    log.info(
        "job %s prepared: %s (%d seeds, %d domains, channel %s)",
        job_id,
        path,
        len(spec["seeds"]),
        len(spec["domains"]),
        spec["channel"],
    )
    return str(path)


def finished_summary(job_spec: str | Path) -> dict[str, Any] | None:
    """The summary.json beside ``job_spec`` when the job's crawl already finished, else None.

    Why: a crawl task cleared or retried after its crawl finished must not crawl the job again
    into the same directory (a second set of WARCs under one job id); it reports the first
    crawl's summary instead. An unfinished crawl has no summary and resumes from its state.
    """
    path = Path(job_spec).parent / "summary.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("%s is unreadable (%s): the crawl is run again", path, exc)
        return None
    return data if isinstance(data, dict) else None


def mark_started(
    job_id: int, engine: Engine | None = None, *, airflow_task: dict[str, Any] | None = None
) -> None:
    """STARTED (idempotent: a job already further on is left alone).

    ``airflow_task`` (dag_id, run_id, task_id, map_index) names the task instance crawling
    the job, so that the curator views can link the job to its task log.
    """
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        job = current_job_id(conn, job_id)
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = :s, startdate = COALESCE(startdate, now())"
                " WHERE job_id = :j AND status < :s"
            ),
            {"s": STARTED, "j": job},
        )
        if airflow_task:
            conn.execute(
                sa.text("UPDATE jobs SET airflow_task = CAST(:t AS jsonb) WHERE job_id = :j"),
                {"t": json.dumps(airflow_task), "j": job},
            )


def list_jobs(
    engine: Engine | None = None,
    *,
    harvest_id: int | None = None,
    status: int | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Jobs newest first with status, channel and counts (for ``harvestflow jobs list``)."""
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT j.job_id, j.harvest_id, h.name AS harvest_name, j.harvest_num, j.status,"
                " j.channel, j.snapshot, j.num_configs, j.creationdate, j.startdate, j.enddate,"
                " j.resubmitted_as_job, j.harvest_errors,"
                " COALESCE(sum(hi.objectcount), 0)::bigint AS objects,"
                " COALESCE(sum(hi.bytecount), 0)::bigint AS bytes"
                " FROM jobs j JOIN harvestdefinitions h USING (harvest_id)"
                " LEFT JOIN historyinfo hi ON hi.job_id = j.job_id"
                " WHERE (CAST(:h AS integer) IS NULL OR j.harvest_id = :h)"
                " AND (CAST(:s AS integer) IS NULL OR j.status = :s)"
                " GROUP BY j.job_id, h.name ORDER BY j.job_id DESC LIMIT :l"
            ),
            {"h": harvest_id, "s": status, "l": limit},
        ).all()
    return [dict(r._mapping) | {"status_name": STATUS_NAMES[r.status]} for r in rows]
