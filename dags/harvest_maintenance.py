"""# Harvest maintenance (Airflow DAG)

Hourly: finds crawl jobs left SUBMITTED or STARTED by a dead worker (no summary, job directory
silent for `stale_after_s`), resubmits each as a new job (NetarchiveSuite's RESUBMITTED, linked
by resubmitted-as; the dead job's partial output stays in its directory), and crawls the new
jobs on the pool of their channel: selective jobs on `crawl_high`, snapshot jobs on `crawl_low`.

## How to check it's working
1. `harvestflow jobs list --status 1` (or 2) shows a job whose worker died.
2. After this DAG's run, that job is RESUBMITTED (5) and `jobs list` shows its new copy DONE.
3. The `resubmit` task log names old → new job ids.

A failed crawl of a resubmitted copy makes the run failed; `done` (the teardown of `resubmit`)
still runs and wakes the indexing chain for the copies that finished.
"""

from typing import Any

from airflow.sdk import DAG, get_current_context, task

from hf_common import (
    HARVEST_DONE,
    HIGH_PRIORITY_POOL,
    LOW_PRIORITY_POOL,
    dag_args,
    form_param,
    task_logger,
)
from hf_harvest_tasks import crawl_job_group

with DAG(
    dag_id="harvest_maintenance",
    schedule="@hourly",
    doc_md=__doc__,
    params={
        "stale_after_s": form_param(
            3600, type="integer", minimum=60, description="Silence that marks a job as dead"
        )
    },
    **dag_args("harvest", "maintenance"),
) as dag:

    @task
    def resubmit() -> dict[str, list[int]]:
        """Resubmit dead jobs; new job ids split by their channel's priority."""
        from harvest.pipeline import resubmit_dead_jobs, split_by_channel

        stale = int(get_current_context()["params"]["stale_after_s"])
        result = resubmit_dead_jobs(stale_after_s=stale)
        new_ids = [int(n) for n in result["resubmitted"].values()]
        for old, new in result["resubmitted"].items():
            task_logger().warning("job %s had no live worker: resubmitted as job %s", old, new)
        return split_by_channel(new_ids)  # each job on its channel's pool and queue

    @task
    def high(split: dict[str, list[int]]) -> list[int]:
        from harvestflow.formats.harvest_channels import ChannelPriority

        return split[ChannelPriority.HIGH]

    @task
    def low(split: dict[str, list[int]]) -> list[int]:
        from harvestflow.formats.harvest_channels import ChannelPriority

        return split[ChannelPriority.LOW]

    @task(outlets=[HARVEST_DONE])
    def done(split: dict[str, list[int]]) -> dict[str, Any]:
        return {k: len(v) for k, v in split.items()}

    jobs = resubmit()
    crawled_high = crawl_job_group(HIGH_PRIORITY_POOL, "high_priority_job").expand(
        job_id=high(jobs)
    )
    crawled_low = crawl_job_group(LOW_PRIORITY_POOL, "low_priority_job").expand(job_id=low(jobs))
    [crawled_high, crawled_low] >> done(jobs).as_teardown(setups=jobs, on_failure_fail_dagrun=True)
