"""# Preservation ingest (Airflow DAG)

SPAR-like ingest of each indexed job into S3 object storage: a BagIt package per job, the job's
metadata WARC first, then its data WARCs one by one, each with an ARK identifier, each verified
(size and SHA-256 checksum, full re-read for a sample) before it is marked preserved. Transient
S3 errors are retried with back-off; serious ones (checksum mismatch, missing file, invalid bag)
put the job in the manual queue with the reason. Woken by the indexing chain (Asset
`x-harvestflow://indexing/files-indexed`). Idempotent: a re-run never mints a second ARK nor writes
an object twice.

A job whose ingest fails (after its retries), or that a serious error put in the manual queue,
makes the run failed; the other jobs go on and
`report` (the teardown of `ready_jobs`) still runs and emits
`x-harvestflow://preservation/packages-preserved`.

## How to check it's working
1. After `harvestflow demo`, `harvestflow preservation queue` lists no job in the manual queue.
2. `harvestflow ark verify <ARK>` on an ARK from the task log says the check character is valid.
3. The objects are in the bucket under `packages/hd-<harvest_id>/job-<job_id>/` (a bag).
"""

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, get_current_context, task

from hf_common import FILES_INDEXED, PRESERVED, dag_args, run_date, task_logger

with DAG(
    dag_id="preservation_ingest",
    schedule=[FILES_INDEXED],
    doc_md=__doc__,
    **dag_args("preservation"),
) as dag:

    @task
    def ready_jobs() -> list[int]:
        from preservation.pipeline import jobs_ready_for_preservation

        jobs = jobs_ready_for_preservation()
        task_logger().info("%d job(s) ready for preservation: %s", len(jobs), jobs)
        return jobs

    @task(
        retries=3,
        retry_delay=timedelta(minutes=1),
        retry_exponential_backoff=True,
        map_index_template="job {{ task.op_kwargs['job_id'] }}",
    )
    def ingest_job(job_id: int) -> dict[str, Any]:
        """One job's package; a serious error put it in the manual queue: this task fails (no
        retry, a person must act), so the run shows red and names the job and the reason."""
        from airflow.sdk.exceptions import AirflowFailException

        from preservation.pipeline import ingest_job as ingest
        from preservation.pipeline import outcome_of

        result = ingest(job_id)
        if outcome_of(result).failed:
            raise AirflowFailException(f"job {job_id} put in the manual queue: {result['error']}")
        return result

    @task(outlets=[PRESERVED])
    def report(results: list[dict[str, Any]]) -> dict[str, Any]:
        from preservation.pipeline import preservation_report

        return preservation_report(run_date(get_current_context()).date())

    jobs = ready_jobs()
    # not on_failure_fail_dagrun: that would hide the ingest_job tasks from the run state
    report(ingest_job.expand(job_id=jobs)).as_teardown(setups=jobs)
