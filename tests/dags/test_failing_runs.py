"""A run of the indexing chain or of preservation in which one file or job fails is red, names
that file or job, and still does the rest: the other files and jobs go through, the bookkeeping
teardown runs and its Asset wakes the next stage. `airflow dags test` (dag.test()) on the
session's real PostgreSQL and SeaweedFS; states read from Airflow's metadata DB.

The harvest DAGs' case (one job's crawl fails) is in test_harvest_workflows.py.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
import sqlalchemy as sa

from harvestflow.settings import Settings
from tests.support.chainkit import job_warcs, make_harvest, wipe_chain_dirs
from tests.support.chainkit import make_job as make_indexing_job
from tests.support.preservation_jobs import make_job  # noqa: F401 - the fixture, used below
from tests.support.runstates import DagTests, asset_events, last_run

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def _overview(settings: Settings, db_engine: sa.Engine) -> str:
    """The curator overview's HTML, with Airflow's metadata database as the plugin gives it."""
    from fastapi.testclient import TestClient

    from app.curator.webapp import create_app

    airflow = sa.create_engine(settings.airflow_db_url)
    try:
        app = create_app(lambda: db_engine, data_dir=settings.data_dir, airflow_db=lambda: airflow)
        page = TestClient(app).get("/")
        assert page.status_code == 200
        return page.text
    finally:
        airflow.dispose()


def test_indexing_chain_run_is_red_when_one_file_fails_and_the_others_go_through(
    airflow_ready: Settings, airflow_runs: DagTests, db_engine: sa.Engine
) -> None:
    wipe_chain_dirs(airflow_ready.data_dir)
    hid = make_harvest(db_engine, "chain-dag")
    job_id, job_dir = make_indexing_job(db_engine, airflow_ready.data_dir, hid, files=2, seed=5)
    good = [w.name for w in job_warcs(job_dir)]  # 2 data WARCs + the metadata WARC
    junk = job_dir / "warcs" / f"{job_id}-{hid}-20261122031800000-00008-crawler.warc.gz"
    junk.write_text("<html>not a warc</html>\n")

    proc = airflow_runs.run("indexing_chain", HARVESTFLOW_INDEXING__MIN_FREE_BYTES="0")
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode != 0, output
    run = last_run(airflow_ready, "indexing_chain")
    assert run.state == "failed"
    assert run.named == {
        f"process_file[{junk.name}]": "failed",  # quarantined: named, not retried
        **{f"process_file[{name}]": "success" for name in good},
    }
    assert {k: v for k, v in run.tasks.items() if not k.startswith("process_file")} == {
        "ingest": "success",
        "pending": "success",
        "chain_done": "success",
        # text extraction waits for every file: the failed one stops it for this run (the
        # good files' text is extracted by the next run, as left over)
        "text_pending": "upstream_failed",
        "extract_text": "upstream_failed",
        "documents_pending": "upstream_failed",  # the same for watched targets' documents
        "extract_documents": "upstream_failed",
        "check_documents": "success",  # the documents indexed earlier are still checked
    }
    assert "not a WARC or ARC file" in proc.stdout + proc.stderr
    with db_engine.connect() as conn:
        stages = dict(conn.execute(sa.text("SELECT file_name, stage FROM index_manifest")).all())
    assert stages == {junk.name: "quarantined", **{name: "done" for name in good}}
    # preservation is woken for the files that went through
    assert asset_events(airflow_ready, run) == [
        ("chain_done", "x-harvestflow://indexing/files-indexed")
    ]
    # the curator overview lists the failed run, naming the file, linking to the run in Airflow
    overview = _overview(airflow_ready, db_engine)
    found = overview.split('id="failed-runs"', 1)[1].split("</table>", 1)[0]
    assert f'href="/dags/indexing_chain/runs/{quote(run.run_id, safe="")}"' in found
    assert f"process_file[{junk.name}]" in found and "text_pending" not in found


def test_preservation_run_is_red_when_one_job_goes_to_the_manual_queue(
    airflow_ready: Settings,
    airflow_runs: DagTests,
    db_engine: sa.Engine,
    fresh_bucket: str,
    make_job,  # noqa: F811
) -> None:  # type: ignore[no-untyped-def]
    kept = make_job((300_000,), harvest_name="pres-dag")
    broken = make_job((200_000,), harvest_name="pres-dag")
    lost = next(p for n, p in broken.files.items() if n != broken.metadata_name)
    lost.unlink()  # a repository file that is gone: a serious error, for a person to act on

    proc = airflow_runs.run("preservation_ingest")  # fresh_bucket: the run's bucket too
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode != 0, output
    run = last_run(airflow_ready, "preservation_ingest")
    assert run.state == "failed"
    assert run.named == {
        f"ingest_job[job {broken.job_id}]": "failed",
        f"ingest_job[job {kept.job_id}]": "success",
    }
    assert {k: v for k, v in run.tasks.items() if not k.startswith("ingest_job")} == {
        "ready_jobs": "success",
        "report": "success",
    }
    assert f"job {broken.job_id} put in the manual queue" in proc.stdout + proc.stderr
    with db_engine.connect() as conn:
        status = dict(
            conn.execute(sa.text("SELECT job_id, status FROM preservation_packages")).all()
        )
    assert status == {kept.job_id: "preserved", broken.job_id: "manual"}
    assert asset_events(airflow_ready, run) == [
        ("report", "x-harvestflow://preservation/packages-preserved")
    ]
