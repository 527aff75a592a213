"""# Broad crawl: the annual snapshot in two steps (Airflow DAG)

NetarchiveSuite's snapshot harvest after the preload: **step 1** harvests every active domain
with a small per-domain budget (default 10,000 URLs), split into jobs by the job generator and
crawled on the **low-priority** pool `crawl_low`, so selective harvests are never starved;
**step 2** is a snapshot definition based on step 1 that re-harvests, with a higher budget, only
the domains that stopped on step 1's limit. Per-domain statistics and stop reasons land in the
harvest history; each finished step wakes the indexing chain. Manual trigger (yearly).

## How to check it's working
1. Run `broad_crawl_preload` first (domains and seeds in the harvest DB).
2. Trigger with a `name` (e.g. `broad-2026`); `step1_jobs` logs the jobs generated.
3. `harvestflow domain show <domain>` shows the step-1 history row with its stop reason;
   domains with stop reason 1/2 (object/size limit) appear again in step 2.

A failed crawl in either step makes the run failed; history is still recorded for every job,
step 2 still runs for the domains step 1 stopped on their limit, and `done` (the teardown of
`step2_definition`) still wakes the indexing chain.
"""

from typing import Any

from airflow.sdk import DAG, get_current_context, task

from hf_common import HARVEST_DONE, LOW_PRIORITY_POOL, dag_args, form_param, task_logger
from hf_harvest_tasks import crawl_on_channels, generate_jobs_for

with DAG(
    dag_id="broad_crawl",
    schedule=None,
    doc_md=__doc__,
    params={
        "name": form_param("broad", type="string", pattern="^[A-Za-z0-9._-]+$", description="Name"),
        "step1_max_objects": form_param(
            10_000, type="integer", minimum=1, description="URLs/domain"
        ),
        "step2_max_objects": form_param(
            100_000, type="integer", minimum=1, description="URLs/domain"
        ),
        "max_bytes": form_param(-1, type="integer", minimum=-1, description="-1 = unlimited"),
        "run_step2": form_param(True, type="boolean", description="Run the second step"),
    },
    **dag_args("harvest", "broad-crawl", "snapshot"),
) as dag:

    @task
    def step1_definition() -> list[int]:
        from harvest.pipeline import create_snapshot_definition, ensure_reference_data

        params = get_current_context()["params"]
        ensure_reference_data()
        hid = create_snapshot_definition(
            params["name"], max_objects=params["step1_max_objects"], max_bytes=params["max_bytes"]
        )
        task_logger().info("step 1: snapshot definition %s", hid)
        return [hid]

    @task(trigger_rule="all_done", outlets=[HARVEST_DONE])
    def step2_definition(step1: list[int]) -> list[int]:
        from harvest.pipeline import create_step2_definition, domains_for_step2

        params = get_current_context()["params"]
        if not params["run_step2"]:
            return []
        domains = domains_for_step2(step1[0])
        task_logger().info("step 2: %d domain(s) stopped on step 1's limit", len(domains))
        if not domains:
            return []
        return [
            create_step2_definition(
                step1[0], max_objects=params["step2_max_objects"], max_bytes=params["max_bytes"]
            )
        ]

    @task(outlets=[HARVEST_DONE])
    def done(step2: list[int]) -> dict[str, Any]:
        return {"step2_definitions": step2}

    step1 = step1_definition()
    step1_jobs = generate_jobs_for.override(task_id="step1_jobs")(step1)
    step1_crawl = crawl_on_channels(step1_jobs, "step1_job", home=LOW_PRIORITY_POOL)
    step2 = step2_definition(step1)
    step1_crawl >> step2
    step2_jobs = generate_jobs_for.override(task_id="step2_jobs")(step2)
    step2_crawl = crawl_on_channels(step2_jobs, "step2_job", home=LOW_PRIORITY_POOL)
    step2_crawl >> done(step2).as_teardown(setups=step2, on_failure_fail_dagrun=True)
