"""# Continuous crawl launcher (Airflow DAG)

The UK Web Archive's frequent-crawl launcher: every hour, reads the curators' crawl feed
(`selection_records`, imported by `harvestflow selection import`) and injects into the continuous
crawl the seeds whose schedule fires in the coming hour — DAILY at the start date's hour, WEEKLY
on the same weekday, MONTHLY on the same day of the month, QUARTERLY / SIXMONTHLY every third /
sixth month on that day, ANNUAL on the same day and month. An injected seed becomes due at once
in the URL state (its history is kept) and its quota of fetches since the last launch is reset
(param `reset_quotas`). Idempotent per launch hour: a re-run injects nothing twice. Wakes the
`continuous_crawl` DAG (Asset `x-harvestflow://continuous/seeds-injected`).

## How to check it's working
1. `harvestflow continuous launch --hour 2026-11-22T09:00` does the same outside Airflow and
   prints the seeds injected; run it twice: the second run injects none.
2. The task log says how many records were due, seeds injected and already launched;
   `SELECT * FROM continuous_launches ORDER BY launch_hour DESC` lists each launch once.
"""

from typing import Any

from airflow.sdk import DAG, CronTriggerTimetable, get_current_context, task

from hf_common import SEEDS_INJECTED, dag_args, form_param, run_date, task_logger

with DAG(
    dag_id="continuous_crawl_launcher",
    schedule=CronTriggerTimetable("@hourly", timezone="UTC"),
    doc_md=__doc__,
    params={
        "reset_quotas": form_param(
            True, type="boolean", title="Reset quotas", description="Reset launched seeds' quotas"
        )
    },
    **dag_args("harvest", "continuous"),
) as dag:

    @task(outlets=[SEEDS_INJECTED])
    def launch() -> dict[str, Any]:
        from harvest.continuous.service import launch as launch_seeds

        context = get_current_context()
        hour = run_date(context).replace(minute=0, second=0, microsecond=0)
        result = launch_seeds(hour, reset_quotas=bool(context["params"].get("reset_quotas")))
        log = task_logger()
        log.info(
            "launch hour %s: %d record(s) due, %d seed(s) injected, %d already launched",
            result.hour,
            result.records_due,
            len(result.injected),
            result.already_launched,
        )
        for seed in result.injected:
            log.info("injected %s", seed)
        return {"hour": result.hour, "injected": len(result.injected)}

    launch()
