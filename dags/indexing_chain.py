"""# Indexing chain (Airflow DAG)

Makes the WARCs of finished jobs findable by the Wayback Machine and moves them to their final
location: **ingest** (single: new WARCs of DONE jobs into the manifest, with checksums) → per
file, as parallel mapped tasks, **index** (CDX + CDXJ lines) → **transfer** (copy to a repository
location with free space, PATH line) → **backup** (optional, verified) → **delete** (controlled
removal from the indexing area). Woken by a finished harvest (Asset
`x-harvestflow://harvest/jobs-done`) and hourly as a sweep. Each module is restartable: a killed
run re-run indexes every file exactly once.

A file whose module fails (after its retries), or that is quarantined, makes the run failed; the other files go on, and
`chain_done` (the teardown of `pending`) still runs and emits
`x-harvestflow://indexing/files-indexed`, so preservation takes the files that went through.

## How to check it's working
1. After a harvest (or `harvestflow demo`), this DAG runs by itself; its `ingest` task log lists
   the files taken in, each `process_file` log the CDX line count and final path.
2. `harvestflow index cdx var/repository/loc1/<file>.warc.gz` prints the capture's CDXJ lines.
3. The `preservation_ingest` DAG starts next (Asset `x-harvestflow://indexing/files-indexed`).
4. Beside the chain, `extract_text` puts each indexed file's HTML, text and PDF captures into the
   full-text index (its log: documents extracted, duplicates, skipped, failed with offsets);
   `harvestflow search query "some words"` then finds them.
5. For the jobs of watched targets (selection records marked `watched`), `extract_documents`
   stores their publications (PDF, Word, ODF, EPUB) with landing pages and metadata
   (indexing/documents); `harvestflow documents list` shows them. `check_documents` then
   offers (state `available`) those the access service replays, and retries the others at the
   next run.
"""

from typing import Any

from airflow.sdk import DAG, AssetOrTimeSchedule, task

from hf_common import FILES_INDEXED, HARVEST_DONE, dag_args, from_next_time, task_logger

with DAG(
    dag_id="indexing_chain",
    schedule=AssetOrTimeSchedule(timetable=from_next_time("@hourly"), assets=[HARVEST_DONE]),
    doc_md=__doc__,
    **dag_args("indexing", start=None),  # the first hourly run at the next hour
) as dag:

    @task
    def ingest() -> list[str]:
        from indexing.pipeline import ingest as ingest_new

        names = ingest_new()
        task_logger().info("%d new WARC file(s) taken in", len(names))
        return names

    @task
    def pending() -> list[str]:
        """Files in the chain not yet through it (new ones and ones an earlier run left)."""
        from indexing.pipeline import pending_files

        return pending_files()

    @task(retries=2, map_index_template="{{ task.op_kwargs['file_name'] }}")
    def process_file(file_name: str) -> dict[str, Any]:
        """The file's remaining modules; a file quarantined by them fails this task (no retry:
        a damaged file stays damaged), so the run shows red and names it."""
        from airflow.sdk.exceptions import AirflowFailException

        from indexing.pipeline import process_file as run_modules

        result = run_modules(file_name)
        if result["quarantined"]:
            raise AirflowFailException(f"{file_name} quarantined: {result['error']}")
        return result

    @task(outlets=[FILES_INDEXED])
    def chain_done(results: list[dict[str, Any]]) -> dict[str, int]:
        done = [r for r in results if r]
        task_logger().info("%d file(s) went through the chain", len(done))
        return {"files": len(done)}

    @task
    def text_pending() -> list[str]:
        """Files past the index module whose text is not yet searchable (new and left over)."""
        from indexing.pipeline import text_pending_files

        return text_pending_files()

    @task(retries=2)
    def extract_text(file_name: str) -> dict[str, Any]:
        from indexing.pipeline import extract_text as extract_file

        result = extract_file(file_name)
        task_logger().info("%s: %s", file_name, result)
        return result

    @task
    def documents_pending() -> list[str]:
        """Files of watched targets' jobs past the index module not yet read for documents."""
        from indexing.pipeline import document_pending_files

        return document_pending_files()

    @task(retries=2, map_index_template="{{ task.op_kwargs['file_name'] }}")
    def extract_documents(file_name: str) -> dict[str, Any]:
        from indexing.pipeline import extract_documents as read_documents

        result = read_documents(file_name)
        task_logger().info("%s: %s", file_name, result)
        return result

    @task(trigger_rule="all_done")
    def check_documents() -> dict[str, int]:
        """New documents the access service now replays become available (retried each run)."""
        from indexing.pipeline import check_documents

        counts = check_documents()
        task_logger().info("documents checked: %s", counts)
        return counts

    files = pending()
    ingest() >> files
    # not on_failure_fail_dagrun: a teardown counted for the run state would hide its upstream
    # process_file tasks from it (Airflow counts a task only when nothing counted follows it)
    processed = process_file.expand(file_name=files)
    chain_done(processed).as_teardown(setups=files)
    # text extraction waits for every file of the run (all_success): a failed file makes the
    # run red through it; the good files' text is then extracted by the next run (left over)
    processed >> (texts := text_pending())
    extract_text.expand(file_name=texts)
    # documents of watched targets, like the text: after every file of the run is indexed
    processed >> (document_files := documents_pending())
    extract_documents.expand(file_name=document_files) >> check_documents()
