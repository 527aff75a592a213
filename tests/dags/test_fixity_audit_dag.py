"""The fixity_audit DAG, run with `airflow dags test` (dag.test()) on the session's real
PostgreSQL and both SeaweedFS servers: a copy damaged in one store is repaired and the run is
green, its log naming the repair; a file damaged in both stores makes the run red, its log naming
the file, the copies and the expected checksum."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import sqlalchemy as sa

from harvestflow import settings as settings_mod
from harvestflow.settings import Settings
from preservation.ingest import ingest_job
from tests.support.objects import corrupt_one_byte, replica_s3_client
from tests.support.preservation_jobs import make_job  # noqa: F401 - the fixture, used below
from tests.support.runstates import DagTests, last_run

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

# the audit share of a day: every file, in every run
EVERY_FILE = "1"


def test_fixity_audit_repairs_one_bad_copy_and_fails_on_a_file_bad_in_both(
    airflow_ready: Settings,
    airflow_runs: DagTests,
    db_engine: sa.Engine,
    fresh_bucket: str,
    s3_client: Any,
    make_job,  # noqa: F811
) -> None:  # type: ignore[no-untyped-def]
    services = airflow_ready
    settings = settings_mod.get_settings()  # with the fresh bucket, as the DAG's task sees it
    job = make_job((200_000, 300_000), metadata_size=50_000, harvest_name="fixity-dag")
    assert ingest_job(job.job_id, settings)["status"] == "preserved"
    replica = replica_s3_client(services)
    prefix = f"packages/hd-{job.harvest_id}/job-{job.job_id}/data/"
    first, second = sorted(n for n in job.files if n != job.metadata_name)

    corrupt_one_byte(replica, fresh_bucket, prefix + first)
    # each run after what the test did before it
    proc = airflow_runs.run(
        "fixity_audit", HARVESTFLOW_PRESERVATION__AUDIT_SHARE_PER_DAY=EVERY_FILE
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    run = last_run(services, "fixity_audit")
    assert (run.state, run.tasks) == ("success", {"audit": "success"})
    assert f"REPAIRED job {job.job_id} {first}: replica copy repaired from the primary" in output
    assert (
        hashlib.sha256(
            replica.get_object(Bucket=fresh_bucket, Key=prefix + first)["Body"].read()
        ).hexdigest()
        == hashlib.sha256(job.files[first].read_bytes()).hexdigest()
    )

    want = hashlib.sha256(job.files[second].read_bytes()).hexdigest()
    corrupt_one_byte(s3_client, fresh_bucket, prefix + second)
    corrupt_one_byte(replica, fresh_bucket, prefix + second)
    proc = airflow_runs.run(
        "fixity_audit", HARVESTFLOW_PRESERVATION__AUDIT_SHARE_PER_DAY=EVERY_FILE
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-4000:]
    run = last_run(services, "fixity_audit")
    assert (run.state, run.tasks) == ("failed", {"audit": "failed"})
    assert "1 file(s) bad in every copy, put in the manual queue" in output
    assert f"{prefix + second} is bad in every copy, expected sha256 {want}" in output
    with db_engine.connect() as conn:
        status = conn.execute(
            sa.text("SELECT status FROM preservation_packages WHERE job_id = :j"),
            {"j": job.job_id},
        ).scalar_one()
    assert status == "manual"
