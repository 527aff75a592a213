"""# One-off harvest (Airflow DAG)

An engineer's harvest outside any schedule, from the trigger form: either one existing harvest
definition (`harvest_id`), or a list of seeds crawled with a named template (a one-off
selective definition is created for them, one configuration per domain). The form is validated
before anything is created; the crawl runs on the high-priority pool like the selective
harvests, and the finished harvest wakes the indexing chain.

## How to check it's working
1. Trigger with `seeds` = `http://www.example-a.test:8099/`, `template` = `demo_loopback` and
   `resolve` = `{"www.example-a.test": "127.0.0.1", "static.example-a.test": "127.0.0.1"}`
   while `harvestflow up` serves the sample site.
2. The `validate` task log names the definition created; the `crawl` log streams progress.
3. `harvestflow jobs list` shows the job DONE.

The run is failed when the form is invalid or a crawl failed (`advance` still closes the run
and wakes the indexing chain for the jobs that finished: it is the teardown of `validate`).
"""

from typing import Any

from airflow.sdk import DAG, get_current_context, task

from hf_common import HARVEST_DONE, dag_args, form_param, run_date, task_logger
from hf_harvest_tasks import crawl_on_channels, generate_jobs_for

with DAG(
    dag_id="oneoff_harvest",
    schedule=None,
    doc_md=__doc__,
    params={
        "harvest_id": form_param(
            None, type=["null", "integer"], minimum=1, description="An existing definition"
        ),
        "seeds": form_param(
            [],
            type="array",
            items={"type": "string", "format": "uri"},
            description="Seed URLs (instead of harvest_id), one per line",
        ),
        "template": form_param(
            "default_selective", type="string", minLength=1, description="Crawl template name"
        ),
        "max_objects": form_param(-1, type="integer", minimum=-1, description="-1 = unlimited"),
        "max_bytes": form_param(
            1_000_000_000, type="integer", minimum=-1, description="-1 = unlimited"
        ),
        "resolve": form_param(
            {},
            type="object",
            additionalProperties={"type": "string", "format": "ipv4"},
            description='Host → address without DNS, e.g. {"www.example-a.test": "127.0.0.1"}',
        ),
    },
    **dag_args("harvest", "one-off", max_active_runs=None),
) as dag:

    @task
    def validate() -> list[int]:
        """Check the form; create the one-off definition for a seed list."""
        from harvest.pipeline import create_seedlist_harvest, start_oneoff, validate_params

        context = get_current_context()
        request = validate_params(dict(context["params"]))
        if request.harvest_id:
            # an extra run: not one of the schedule's repeats
            start_oneoff(request.harvest_id, run_date(context))
            return [request.harvest_id]
        harvest_id = create_seedlist_harvest(
            list(request.seeds),
            request.template,
            context["dag_run"].run_id,
            max_objects=request.max_objects,
            max_bytes=request.max_bytes,
            resolve=dict(context["params"].get("resolve") or {}),
        )
        task_logger().info("one-off definition %s for %d seed(s)", harvest_id, len(request.seeds))
        return [harvest_id]

    @task(outlets=[HARVEST_DONE])
    def advance(harvest_ids: list[int]) -> dict[str, Any]:
        """Close the run; a scheduled definition's counter and next date stay (an extra run)."""
        from harvest.pipeline import finish_oneoff

        when = run_date(get_current_context())
        return {str(h): finish_oneoff(h, when) for h in harvest_ids}

    harvest_ids = validate()
    jobs = generate_jobs_for(harvest_ids)
    crawl_on_channels(jobs) >> advance(harvest_ids).as_teardown(
        setups=harvest_ids, on_failure_fail_dagrun=True
    )
