"""# Daily QA statistics (Airflow DAG)

NAS_qual's daily figures for curators, managers and the ISO/TR 14873 indicators: from the crawl
logs and the harvest DB of the jobs that ended on the run's day — URLs, bytes, new vs duplicate
captures, MIME types and families, response codes (with the crawler's negative codes), TLDs, top
domains, domain size distribution, seed origin, stop reasons, traps and DNS failures — as text
files, CSV and an HTML page with charts under `var/qa/<date>/`, and in the DB. `@daily`,
backfillable, idempotent per day (re-running a day rewrites the same files).

## How to check it's working
1. `harvestflow qa daily --date YYYY-MM-DD` runs the same computation outside Airflow.
2. The task log ends with a short summary; `var/qa/<date>/index.html` shows the charts.
"""

from typing import Any

from airflow.sdk import DAG, get_current_context, task

from hf_common import dag_args, day_param, from_next_time, report_day, task_logger

with DAG(
    dag_id="daily_qa_stats",
    schedule=from_next_time("@daily"),
    doc_md=__doc__,
    params={"day": day_param()},
    **dag_args("qa", max_active_runs=2, start=None),  # the first run at the next midnight
) as dag:

    @task(show_return_value_in_logs=False)  # the curator summary stays the last lines
    def daily_stats() -> dict[str, Any]:
        from qa.daily import run_daily, summary_lines

        result = run_daily(report_day(get_current_context()))
        for line in summary_lines(result):
            task_logger().info("%s", line)
        return {k: v for k, v in result.items() if isinstance(v, int | float | str)}

    daily_stats()
