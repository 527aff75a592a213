"""The selective-harvest workflow, shared by the five per-frequency DAG files.

Not a DAG file (listed in .airflowignore): ``selective_harvest_daily.py`` and its siblings call
:func:`build_selective_harvest` with their frequency and schedule, so that each DAG id is its
file's stem and each frequency fires on its own schedule.

Run: transfer the due selection records → pick the definitions due at the run's date →
generate jobs (a definition whose generation fails is deactivated with the reason, the others go
on) → per job (mapped task group, one failing job never blocks the others): prepare
the frozen job spec, crawl it on the high-priority channel, record per-domain history → advance
each definition's schedule → emit HARVEST_DONE, which wakes the indexing chain.

Run state: recording and advancing are Airflow teardowns, so they run after failed crawls too,
and the run is failed when a crawl (or job generation) failed, success only when all did their
work. ``advance_schedules`` also counts (``on_failure_fail_dagrun``): a schedule that could not
be advanced is a failed run. It emits HARVEST_DONE whenever it ran, failed jobs or not: the
indexing chain takes in only DONE jobs, so the jobs that finished are indexed at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import DAG, get_current_context, task

from hf_common import HARVEST_DONE, dag_args, form_param, run_date
from hf_harvest_tasks import crawl_on_channels, generate_due_jobs_for

DOC_CHECK = """
## How to check it's working
1. `harvestflow demo` (or, with `harvestflow up` running, trigger this DAG with
   `harvest_id` set to the demo definition's id shown by `harvestflow jobs list`).
2. The run's `crawl` task log shows a progress line every few seconds (URLs done/queued, rate).
3. `harvestflow jobs list` shows the job DONE with URL and byte counts; its directory
   `var/jobs/<harvest_id>/<job_id>/<ts>/` holds warcs/, logs/crawl.log and reports/.
4. The `indexing_chain` DAG starts by itself (Asset `x-harvestflow://harvest/jobs-done`).
"""


def build_selective_harvest(
    dag_id: str, frequency: str, schedule: Any, doc: str, start: datetime
) -> DAG:
    with DAG(
        dag_id=dag_id,
        schedule=schedule,
        doc_md=doc + DOC_CHECK,
        **dag_args("harvest", "selective", frequency, start=start),
        params={
            "harvest_id": form_param(
                None,
                type=["null", "integer"],
                minimum=1,
                title="One definition only",
                description="Harvest only this definition now, whatever its schedule.",
            ),
        },
        default_args={"retries": 0},
    ) as dag:

        @task
        def transfer_selection() -> dict[str, Any]:
            """Curators' due selection records → domains, configurations, definitions."""
            from harvest.pipeline import ensure_reference_data, transfer_selection_records

            ensure_reference_data()
            return transfer_selection_records(frequency)

        @task
        def due_definitions() -> list[int]:
            from harvest.pipeline import due_definitions as due

            context = get_current_context()
            only = context["params"].get("harvest_id")
            if only:
                return [int(only)]
            return due(frequency, run_date(context))

        @task(outlets=[HARVEST_DONE])
        def advance_schedules(harvest_ids: list[int]) -> dict[str, Any]:
            from harvest.pipeline import advance_schedule

            when = run_date(get_current_context())
            return {str(h): advance_schedule(h, when) for h in harvest_ids}

        harvest_ids = due_definitions()
        transfer_selection() >> harvest_ids
        jobs = generate_due_jobs_for(harvest_ids)
        crawl_on_channels(jobs) >> advance_schedules(harvest_ids).as_teardown(
            setups=harvest_ids, on_failure_fail_dagrun=True
        )
    return dag
