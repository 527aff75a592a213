"""# Continuous crawl (Airflow DAG)

The never-ending crawl of news sites with adaptive revisiting, as a chain of bounded runs that
resume from the URL state in PostgreSQL (`continuous_url_state`): each run fetches the URLs due,
in order of due time, with the archival crawler (per-host politeness, conditional requests from
the stored ETag / Last-Modified, unchanged payloads written as revisit records), learns each
URL's revisit interval from whether it changed (noise rules from `continuous_noise_rules`
ignored), adds the new in-scope URLs found on changed pages, and indexes each WARC into the live
collection as soon as the crawler closes it, during the run (`<data>/continuous/live`,
replayable by pywb seconds to minutes after the fetch; WARCs rotate at 50 MB by default).
Every 10 minutes and when the launcher injects seeds; one run at a time, ~9 minutes of
crawling each, on its own pool and queue `crawl_continuous`
(`[airflow] continuous_pool`), so selective harvests keep both `crawl_high` slots. Each bounded run is a DONE job; when the task
wrote WARCs it wakes the `indexing_chain` (Asset `x-harvestflow://harvest/jobs-done`), so the
permanent index takes them in minutes after they closed, not at the chain's hourly sweep.

## How to check it's working
1. The `crawl` task log has one `continuous: due N / overdue M (max h late) / done K` line per
   batch, and a line per run with visited / changed / unchanged / new URLs / CDXJ lines.
2. The `report` task log (or `harvestflow continuous report`) shows per host the learnt revisit
   intervals, change rates, backlog and overdue URLs.
3. A page fetched minutes ago replays from the live collection:
   `wayback` started in `<data>/continuous/live` (config.yaml written there).
4. After a crawl that wrote WARCs, `handed_off` ran (not skipped) and an `indexing_chain` run
   follows.
"""

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, AssetOrTimeSchedule, CronTriggerTimetable, task

from hf_common import (
    CONTINUOUS_POOL,
    HARVEST_DONE,
    SEEDS_INJECTED,
    dag_args,
    task_logger,
)

CRAWL_MINUTES = 9

with DAG(
    dag_id="continuous_crawl",
    schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("*/10 * * * *", timezone="UTC"), assets=[SEEDS_INJECTED]
    ),
    doc_md=__doc__,
    **dag_args("harvest", "continuous"),
) as dag:

    @task(
        pool=CONTINUOUS_POOL,
        queue=CONTINUOUS_POOL,
        execution_timeout=timedelta(minutes=CRAWL_MINUTES + 20),
    )
    def crawl() -> dict[str, Any]:
        from harvest.continuous.service import base_dir, crawl_for
        from indexing.pipeline import LiveWatcher, pywb_config

        pywb_config(base_dir() / "live")
        return crawl_for(CRAWL_MINUTES * 60, logger=task_logger(), live_index=LiveWatcher)

    @task(trigger_rule="all_done")
    def report() -> dict[str, Any]:
        from harvest.continuous.service import report_text

        text = report_text()
        for line in text.splitlines():
            task_logger().info("%s", line)
        return {"lines": len(text.splitlines())}

    @task.short_circuit
    def wrote_warcs(result: dict[str, Any]) -> bool:
        return int(result.get("warcs") or 0) > 0

    @task(outlets=[HARVEST_DONE])
    def handed_off() -> None:
        """Wakes the indexing chain (the runs' jobs are DONE with their WARCs closed)."""

    crawled = crawl()
    crawled >> report()
    wrote_warcs(crawled) >> handed_off()
