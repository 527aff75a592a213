"""Task groups shared by the harvest DAGs (selective, one-off, broad crawl).

Not a DAG file (listed in .airflowignore). One crawl job = one mapped task group: prepare the
frozen job spec → crawl it (a crawler subprocess whose progress lines stream into this task's
log) on the channel's pool → record per-domain history and stop reasons, even after a failed
crawl (partial output is kept and post-processed). Mapped per job, so one failing job never
blocks the others.

Why setup/teardown: ``record`` is the teardown of ``prepare`` (Airflow runs it once the crawl
is done, whatever its outcome), and Airflow leaves teardowns out when it decides a run's state.
So the crawl task itself is a leaf for the run state: a failed crawl makes the DAG run failed,
while its job is still recorded and the other jobs go on. The group returns ``record``, so a
task set downstream of the group (``group >> advance``) waits for every job's record, not only
for the crawls: the HARVEST_DONE Asset must not wake indexing before the jobs are marked DONE.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import task, task_group

from hf_common import HIGH_PRIORITY_POOL, LOW_PRIORITY_POOL, task_logger


def crawl_job_group(pool: str, group_id: str = "harvest_job") -> Any:
    """A task group to ``.expand(job_id=...)``, crawling on ``pool`` (also its queue)."""

    @task_group(group_id=group_id)
    def harvest_job(job_id: int) -> Any:
        @task
        def prepare(job_id: int) -> str:
            from harvest.pipeline import prepare_job
            from harvestflow.settings import get_settings
            from indexing.pipeline import dedup_index_for_job

            return prepare_job(job_id, get_settings().data_dir, dedup_index=dedup_index_for_job)

        # retries: a worker lost mid-crawl (its task instance failed by the scheduler) is
        # followed by another worker, which takes the expired job lease and resumes the job;
        # so is a crawl that ended unfinished (crawler.launch.CrawlUnfinished); a short delay,
        # since the retry waits for the job lease anyway (docs/engineers/several-machines.md);
        # not a job the crawler refused (crawler.launch.CrawlRefused: its spec breaks the
        # contract), which every retry would start a crawler for, to be refused the same way
        @task(
            pool=pool,
            queue=pool,
            execution_timeout=timedelta(hours=24),
            retries=2,
            retry_delay=timedelta(seconds=5),
        )
        def crawl(job_id: int, job_spec: str) -> dict[str, Any]:
            from airflow.sdk import get_current_context
            from airflow.sdk.exceptions import AirflowFailException

            from harvest.pipeline import CrawlRefused, crawl_prepared_job

            ti = get_current_context()["ti"]
            task = {"dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id}
            # an unfinished crawl (SIGTERM...) raises like a failed one: the retry resumes it
            try:
                return crawl_prepared_job(
                    job_id,
                    job_spec,
                    airflow_task={**task, "map_index": ti.map_index},
                    logger=task_logger(),
                )
            except CrawlRefused as exc:  # failed without its retries
                raise AirflowFailException(str(exc)) from exc

        @task
        def record(job_id: int) -> dict[str, Any]:
            from harvest.pipeline import record_job_results

            return record_job_results(job_id)

        spec = prepare(job_id)
        recorded = record(job_id).as_teardown(setups=spec)
        crawl(job_id, spec) >> recorded
        return recorded

    return harvest_job


@task
def jobs_on_channel(job_ids: list[int], pool: str) -> list[int]:
    """The jobs whose harvest channel's priority crawls on ``pool`` (selective channels on the
    high-priority pool, snapshot channels on the low-priority one: ChannelPriority)."""
    from harvest.pipeline import split_by_channel
    from harvestflow.formats.harvest_channels import ChannelPriority

    pool_of = {ChannelPriority.HIGH: HIGH_PRIORITY_POOL, ChannelPriority.LOW: LOW_PRIORITY_POOL}
    split = split_by_channel(job_ids)
    jobs = [j for priority in ChannelPriority if pool_of[priority] == pool for j in split[priority]]
    task_logger().info("job(s) on the %s pool's channels: %s", pool, jobs)
    return jobs


def crawl_on_channels(
    job_ids: Any, group_id: str = "harvest_job", home: str = HIGH_PRIORITY_POOL
) -> list[Any]:
    """Crawl each job on its channel's pool and queue (decided at run time, not by the DAG).

    Why two mapped groups and not one with a per-job pool: Airflow fixes a mapped task's pool
    and queue when the scheduler creates its task instances (``.partial()`` values, not mapped
    arguments), so a job's channel picks which of the two groups crawls it. The DAG's usual
    pool (``home``, one of the settings' two) keeps ``group_id``; the other is
    ``<group_id>_on_<pool>`` (often zero jobs, skipped). Pools are the DAG's vocabulary here:
    their names are fixed at parse time from the settings, the channel priorities are read in
    the routing task.
    """
    pools = [home] + [p for p in (HIGH_PRIORITY_POOL, LOW_PRIORITY_POOL) if p != home]
    groups = []
    for pool in pools:
        gid = group_id if pool == home else f"{group_id}_on_{pool}"
        jobs = jobs_on_channel.override(task_id=f"{gid}_route")(job_ids, pool)
        groups.append(crawl_job_group(pool, gid).expand(job_id=jobs))
    return groups


@task
def generate_jobs_for(harvest_ids: list[int]) -> list[int]:
    """Jobs of the definitions' run at the DAG run's date (idempotent per run)."""
    from airflow.sdk import get_current_context

    from harvest.pipeline import generate_jobs
    from hf_common import run_date

    moment = run_date(get_current_context())
    job_ids: list[int] = []
    for harvest_id in harvest_ids:
        job_ids.extend(generate_jobs(harvest_id, moment))
    task_logger().info("%d job(s) to crawl: %s", len(job_ids), job_ids)
    return job_ids


@task
def generate_due_jobs_for(harvest_ids: list[int]) -> list[int]:
    """Jobs of a selective run's due definitions; one whose generation fails is deactivated
    with the reason (logged here, shown by `harvestflow definitions list`), the others go on."""
    from airflow.sdk import get_current_context

    from harvest.pipeline import generate_due_jobs
    from hf_common import run_date

    result = generate_due_jobs(harvest_ids, run_date(get_current_context()))
    for harvest_id, reason in result["deactivated"].items():
        task_logger().error("definition %s deactivated: %s", harvest_id, reason)
    task_logger().info("%d job(s) to crawl: %s", len(result["jobs"]), result["jobs"])
    return list(result["jobs"])
