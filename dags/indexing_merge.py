"""# Index merge (Airflow DAG)

Daily: the day's CDX and PATH files are merged into sorted daily files (**merge**), then into the
big sorted CDX and PATH files the Wayback Machine reads (**bigmerge**, single), the replay
service's ZipNum indexes (the archive's and each harvest definition's) are rebuilt from them,
its not-yet-merged files (many small ones compacted into one) and per-definition collections
refreshed, without restarting it (**refresh_access**, idempotent: unchanged inputs,
nothing rebuilt), and job WARCs are removed from the crawl area only when indexed, transferred
and, if configured, backed up and verified (**cleanarcrepository**, single). Byte-order sorting
(LC_ALL=C semantics), checked after each merge. Backfillable: a past date re-merges that day,
idempotently.

## How to check it's working
1. Trigger it (or wait for midnight UTC); the `merge` task log gives the day's line counts.
2. `var/index/cdx/` holds the big CDX file; `LC_ALL=C sort -c` on it succeeds.
3. The `refresh_access` log names the ZipNum indexes built (`var/access/zipnum/all/all.idx`);
   a capture of the day answers at `http://127.0.0.1:8090/all/cdx?url=…`.
"""

from typing import Any

from airflow.sdk import DAG, get_current_context, task

from hf_common import dag_args, day_param, from_next_time, report_day

with DAG(
    dag_id="indexing_merge",
    schedule=from_next_time("@daily"),
    doc_md=__doc__,
    params={"day": day_param()},
    **dag_args("indexing", start=None),  # the first run at the next midnight
) as dag:

    @task
    def merge() -> dict[str, Any]:
        from indexing.pipeline import daily_merge

        return daily_merge(report_day(get_current_context()))

    @task
    def bigmerge() -> dict[str, Any]:
        from indexing.pipeline import bigmerge as merge_big

        return merge_big()

    @task
    def refresh_access() -> dict[str, Any]:
        from access.pipeline import refresh_access as refresh

        return refresh()

    @task
    def clean_arc_repository() -> dict[str, Any]:
        from indexing.pipeline import clean_arc_repository as clean
        from preservation.pipeline import file_preserved

        return clean(preserved=file_preserved)

    big = bigmerge()
    merge() >> big >> [refresh_access(), clean_arc_repository()]
