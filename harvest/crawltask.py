"""The harvest DAG's crawl task as a function: one prepared job crawled under its lease.

Why here and not in the DAG file: what the task does (skip a job already crawled, take the
job's lease, mark it started, run the crawler child, fail on an unfinished crawl) is business
logic, and a test must run exactly what the task runs. The Airflow task only hands in its
identity and its logger (dags/hf_harvest_tasks.py).

Outcomes: a finished crawl (complete, time limit, operator's stop) returns its summary's brief;
one that ended unfinished raises :class:`crawler.launch.CrawlUnfinished` and one whose child
failed :class:`crawler.launch.CrawlFailed` — the task fails, its retry resumes the job from its
frontier in the same directory, and after the last try the job is recorded FAILED
(harvest.results.record_job_results); a job the crawler refused raises
:class:`crawler.launch.CrawlRefused` (a CrawlFailed), which the task does not retry.
"""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Any

from crawler.launch import crawl_in_subprocess
from harvest.joblease import check_worker_can_crawl, job_lease, lease_wait_s
from harvest.jobs import finished_summary, mark_started
from harvest.page_qa import log_summary
from harvestflow.services.process import tie_to_parent
from harvestflow.settings import get_settings

log = logging.getLogger(__name__)


def crawl_prepared_job(
    job_id: int,
    job_spec: str | Path,
    *,
    airflow_task: dict[str, Any] | None = None,
    logger: logging.Logger | None = None,
) -> dict[str, Any]:
    """Crawl the job of ``job_spec`` (from :func:`harvest.jobs.prepare_job`) into its directory.

    Returns the summary's brief (the task's XCom). Raises ``CrawlUnfinished`` / ``CrawlFailed``
    (see the module docstring) and :class:`crawler.leases.LeaseHeld` when another live crawler
    holds the job.
    """
    logger = logger or log
    if airflow_task is not None:
        # the task runner dies with its supervisor (a killed worker); its crawler, in turn,
        # gets SIGTERM when the task runner dies (crawler.launch), checkpoints and exits
        tie_to_parent(signal.SIGKILL)
    spec = Path(job_spec)
    summary = finished_summary(spec)
    if summary is not None:  # a re-run after the crawl finished: not crawled twice
        logger.info("job %s was already crawled in %s", job_id, spec.parent)
        return summary.brief()
    check_worker_can_crawl()  # the shared data directory, or a clear refusal
    # one crawler per job, cluster-wide; a dead crawler's job is resumed once its lease
    # expired (asked again for 1.5 × the TTL), a live one's is refused
    with job_lease(job_id, wait_s=lease_wait_s()):
        mark_started(job_id, airflow_task=airflow_task)
        summary = crawl_in_subprocess(
            spec,
            spec.parent,
            logger=logger,
            progress_interval_s=float(get_settings()["airflow"]["progress_interval_s"]),
        )
    log_summary(spec.parent, logger)  # the QA pass's pages, scores and misses, at the end
    return summary.brief()
