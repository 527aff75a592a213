"""Jobs after generation: the frozen job spec, status moves, resubmission, listing; and the
jobs table as the other stages read and write it (indexing, preservation, QA, the control of a
running job call the functions at the end of this module, never SQL on ``jobs``).

Why ``prepare_job`` writes ``job.json`` once: the spec is the contract with the crawler and
what a curator reads to know what was asked; a retried task must find the same directory (same
launch timestamp) instead of starting a second crawl beside the first. Status only moves
forward (a trigger in sql/001 refuses the rest).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import engine_or_default, utcnow
from harvest.spec_builder import build_spec
from harvestflow.atomic import atomic_write_text
from harvestflow.contracts import ContractError
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.summary import JobSummary
from harvestflow.formats.job_status import JobStatus

log = logging.getLogger(__name__)

# writes the job's dedup index in its directory and returns its path (None: no index); the
# indexing package's ``indexing.dedup_index.dedup_index_for_job``, given by the caller (the
# harvest DAG), as harvest sits below indexing in the layering and must not import it
DedupIndexFn = Callable[[Connection, Any, Path], str | None]


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


def resubmit_job(job_id: int, engine: Engine | None = None, *, reason: str | None = None) -> int:
    """A NEW copy of ``job_id`` (same run, frozen template and seeds); returns its id.

    The old job becomes RESUBMITTED with ``resubmitted_as_job`` set; a job already resubmitted
    returns the job it was resubmitted as.
    """
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        old = conn.execute(
            sa.text("SELECT * FROM jobs WHERE job_id = :j FOR UPDATE"), {"j": job_id}
        ).first()
        if old is None:
            raise LookupError(f"job {job_id} does not exist")
        if old.resubmitted_as_job is not None:
            return int(old.resubmitted_as_job)
        if old.status == JobStatus.NEW:
            raise ValueError(f"job {job_id} was never submitted: nothing to resubmit")
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(4242, :h)"), {"h": old.harvest_id})
        next_index = conn.execute(
            sa.text(
                "SELECT max(job_index) + 1 FROM jobs WHERE harvest_id = :h AND harvest_num = :n"
            ),
            {"h": old.harvest_id, "n": old.harvest_num},
        ).scalar_one()
        new_id = conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel, snapshot,"
                " template_name, template, seedlist, crawlertraps, forcemaxobjects,"
                " forcemaxbytes, forcemaxrunningtime, num_configs, resolve, logical_date)"
                " SELECT harvest_id, harvest_num, :i, :new, channel, snapshot, template_name,"
                " template, seedlist, crawlertraps, forcemaxobjects, forcemaxbytes,"
                " forcemaxrunningtime, num_configs, resolve, logical_date FROM jobs"
                " WHERE job_id = :j RETURNING job_id"
            ),
            {"i": next_index, "new": JobStatus.NEW, "j": job_id},
        ).scalar_one()
        conn.execute(
            sa.text(
                "INSERT INTO job_configs (job_id, config_id) SELECT :n, config_id"
                " FROM job_configs WHERE job_id = :j"
            ),
            {"n": new_id, "j": job_id},
        )
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = GREATEST(status, :r), resubmitted_as_job = :n,"
                " harvest_error_details = concat_ws('; ', harvest_error_details, :why)"
                " WHERE job_id = :j"
            ),
            {
                "r": JobStatus.RESUBMITTED,
                "n": new_id,
                "j": job_id,
                "why": reason or f"resubmitted as job {new_id}",
            },
        )
    log.warning("job %s resubmitted as job %s%s", job_id, new_id, f": {reason}" if reason else "")
    return int(new_id)


def prepare_job(
    job_id: int,
    data_dir: str | Path,
    engine: Engine | None = None,
    *,
    dedup_index: DedupIndexFn | None = None,
) -> str:
    """Write the frozen job spec and mark the job SUBMITTED; returns the job.json path.

    ``dedup_index`` writes the job's deduplication index
    (``indexing.dedup_index.dedup_index_for_job``, which the harvest DAG passes); without it the
    job has none and stores every payload.

    Idempotent: a job already prepared (SUBMITTED, STARTED, DONE) keeps its directory and spec,
    and the existing path is returned. A FAILED job being prepared again (its tasks re-run) is
    resubmitted first — status never moves back, so the retry is a new job linked by
    resubmitted-as — and the new job's spec is returned; :func:`mark_started` and
    :func:`harvest.results.record_job_results` follow that link, so a DAG holding the old id
    carries on with the new job.
    """
    engine = engine_or_default(engine)
    with engine.connect() as conn:
        job_id = current_job_id(conn, job_id)
        status = conn.execute(
            sa.text("SELECT status FROM jobs WHERE job_id = :j"), {"j": job_id}
        ).scalar()
    if status == JobStatus.FAILED:
        job_id = resubmit_job(job_id, engine, reason="failed job prepared again (retry)")
    with engine.begin() as conn:
        job = _job_row(conn, job_id, lock=True)
        if job.status != JobStatus.NEW and job.job_dir:
            path = JobDir(job.job_dir).job_json
            if path.exists():
                return str(path)
            log.warning("job %s: %s vanished, writing it again", job_id, path)
            directory = Path(job.job_dir)
        else:
            directory = job_dir_for(Path(data_dir), job, utcnow())
        directory.mkdir(parents=True, exist_ok=True)
        dedup = dedup_index(conn, job, directory) if dedup_index is not None else None
        spec = build_spec(conn, job, dedup)
        path = JobDir(directory).job_json
        atomic_write_text(path, json.dumps(spec.to_dict(), indent=1, sort_keys=False) + "\n")
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = GREATEST(status, :s), job_dir = :d, dedup_index = :x,"
                " submitteddate = COALESCE(submitteddate, now()) WHERE job_id = :j"
            ),
            {"s": JobStatus.SUBMITTED, "d": str(directory), "x": dedup, "j": job_id},
        )
    log.info(
        "job %s prepared: %s (%d seeds, %d domains, channel %s)",
        job_id,
        path,
        len(spec.seeds),
        len(spec.domains),
        spec.channel,
    )
    return str(path)


def finished_summary(job_spec: str | Path) -> JobSummary | None:
    """The summary.json beside ``job_spec`` when the job's crawl already finished, else None.

    Why: a crawl task cleared or retried after its crawl finished must not crawl the job again
    into the same directory (a second set of WARCs under one job id); it reports the first
    crawl's summary instead. A killed crawl has no summary, and one that ended ``unfinished``
    (SIGTERM...) left its frontier: both are crawled again, resuming from their state.
    """
    path = JobDir.of_spec(job_spec).summary_json
    try:
        summary = JobSummary.read(path)
        if not summary.finished:
            log.info("%s: the crawl ended %s, it is resumed", path, summary.status or "unfinished")
            return None
        return summary
    except FileNotFoundError:
        return None
    except (OSError, ContractError) as exc:
        log.warning("%s is unreadable (%s): the crawl is run again", path, exc)
        return None


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
            {"s": JobStatus.STARTED, "j": job},
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
    return [dict(r._mapping) | {"status_name": JobStatus(r.status).name} for r in rows]


# The jobs table as the other stages read and write it: they call these, never SQL on jobs.


def job_status(conn: Connection, job_id: int) -> int | None:
    """The job's status code, None when there is no such job."""
    status = conn.execute(
        sa.text("SELECT status FROM jobs WHERE job_id = :j"), {"j": job_id}
    ).scalar()
    return None if status is None else int(status)


def job_exists(conn: Connection, job_id: int) -> bool:
    found = conn.execute(sa.text("SELECT 1 FROM jobs WHERE job_id = :j"), {"j": job_id})
    return found.first() is not None


def final_job_rows(conn: Connection) -> list[Any]:
    """(job_id, harvest_id, job_dir, status) of the DONE and RESUBMITTED jobs with a directory."""
    return list(
        conn.execute(
            sa.text(
                "SELECT job_id, harvest_id, job_dir, status FROM jobs"
                f" WHERE status IN ({JobStatus.DONE:d}, {JobStatus.RESUBMITTED:d})"
                " AND job_dir IS NOT NULL ORDER BY job_id"
            )
        ).all()
    )


def job_with_definition(conn: Connection, job_id: int) -> dict[str, Any] | None:
    """The job's row (what preservation records) with its definition's name, or None."""
    row = (
        conn.execute(
            sa.text(
                "SELECT j.job_id, j.harvest_id, h.name AS harvest_name, j.harvest_num, j.status,"
                " j.channel, j.snapshot, j.template_name, j.startdate, j.enddate, j.job_dir"
                " FROM jobs j JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
                " WHERE j.job_id = :j"
            ),
            {"j": job_id},
        )
        .mappings()
        .first()
    )
    return dict(row) if row is not None else None


def jobs_ended_between(conn: Connection, start: datetime, end: datetime) -> list[Any]:
    """The jobs that ended in [start, end), with their definition's name and kind (QA)."""
    sql = sa.text(
        "SELECT j.job_id, j.harvest_id, h.name AS harvest_name, h.kind, j.harvest_num,"
        " j.status, j.startdate, j.enddate, j.job_dir"
        " FROM jobs j JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id"
        " WHERE j.enddate >= :start AND j.enddate < :end ORDER BY j.job_id"
    )
    return list(conn.execute(sql, {"start": start, "end": end}).all())


def jobs_of_definition(conn: Connection, harvest_id: int) -> list[Any]:
    """(job_id, status, job_dir) of a definition's jobs, oldest first."""
    return list(
        conn.execute(
            sa.text(
                "SELECT job_id, status, job_dir FROM jobs WHERE harvest_id = :h ORDER BY job_id"
            ),
            {"h": harvest_id},
        ).all()
    )


def job_of_definition_named(conn: Connection, name: str) -> tuple[int, int, str] | None:
    """(job_id, harvest_id, job_dir) of a job of the definition called ``name``, or None."""
    row = conn.execute(
        sa.text(
            "SELECT j.job_id, j.harvest_id, j.job_dir FROM jobs j"
            " JOIN harvestdefinitions h ON h.harvest_id = j.harvest_id WHERE h.name = :n"
        ),
        {"n": name},
    ).first()
    return (int(row[0]), int(row[1]), str(row[2])) if row else None


def register_done_job(
    conn: Connection,
    *,
    name: str,
    comments: str,
    reason: str,
    channel: str,
    template: str,
    spec: dict[str, Any],
) -> tuple[int, int]:
    """(harvest_id, job_id) of a new inactive definition with one DONE job and no directory yet
    (a retrospective delivery: files harvested elsewhere); :func:`set_job_dir` shows it to the
    indexing chain once its files are in place."""  # fmt: skip
    harvest_id = int(
        conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (name, comments, kind, isactive,"
                " inactive_reason) VALUES (:n, :c, 'partial', false, :r) RETURNING harvest_id"
            ),
            {"n": name, "c": comments, "r": reason},
        ).scalar_one()
    )
    job_id = int(
        conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                " template_name, template, seedlist)"
                " VALUES (:h, 1, 0, :s, :c, :t, CAST(:spec AS jsonb), '')"
                " RETURNING job_id"
            ),
            {
                "h": harvest_id,
                "s": JobStatus.DONE,
                "c": channel,
                "t": template,
                "spec": json.dumps(spec),
            },
        ).scalar_one()
    )
    return harvest_id, job_id


def set_job_dir(conn: Connection, job_id: int, job_dir: str) -> None:
    conn.execute(
        sa.text("UPDATE jobs SET job_dir = :d WHERE job_id = :j"),
        {"d": job_dir, "j": job_id},
    )


def jobs_with_status(conn: Connection, statuses: tuple[int, ...]) -> list[Any]:
    """(job_id, status, job_dir) of the jobs in one of ``statuses``, by id."""
    return list(
        conn.execute(
            sa.text(
                "SELECT job_id, status, job_dir FROM jobs WHERE status = ANY(:s) ORDER BY job_id"
            ),
            {"s": list(statuses)},
        ).all()
    )


def definitions_of_jobs(conn: Connection, job_ids: Iterable[int]) -> dict[int, int]:
    """Job id → its harvest definition's id (unknown jobs are left out)."""
    rows = conn.execute(
        sa.text("SELECT job_id, harvest_id FROM jobs WHERE job_id = ANY(:ids)"),
        {"ids": sorted({int(j) for j in job_ids})},
    )
    return {int(j): int(h) for j, h in rows}
