"""The job spec (job.json) of a jobs row: what the crawler is asked to do, built once by
:func:`harvest.jobs.prepare_job`.

Why its own module: the spec is the contract with the crawler (its model is
:mod:`harvestflow.contracts.jobspec`); building it reads the job's configurations and
credentials, which the job lifecycle in :mod:`harvest.jobs` does not otherwise need.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvestflow.contracts.jobspec import JobSpec
from harvestflow.credentials import refs_for_job


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


def build_spec(conn: Connection, job: Any, dedup_index: str | None = None) -> JobSpec:
    """The job spec (job.json) of a jobs row as its model (:mod:`harvestflow.contracts.jobspec`;
    the keys are listed in docs/architecture.md). The template is written as the harvest DB has
    it and checked by the crawler when the crawl starts (a bad one fails the job there).

    Credentials of the job's domains are given by reference only (no secret in job.json): the
    crawler reads them decrypted at run time (harvestflow/credentials.py).
    """
    domains = job_domains(conn, job)
    credentials = refs_for_job(conn, job.harvest_id, [d["domain"] for d in domains])
    data = {
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
    # the template is checked by the crawler when the crawl starts (a bad one FAILS the job)
    return JobSpec.from_dict(data, f"job {job.job_id}", resolve=False)
