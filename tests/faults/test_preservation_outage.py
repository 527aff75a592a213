"""S3 (the embedded SeaweedFS of the ``services`` fixture) stopped during a preservation
upload, for longer than the ingest's retries ride out: the ingest fails as transient (its task
fails and Airflow retries it), the package stays ``ingesting``, never ``preserved`` with a file
missing; the rerun once S3 is back stores every file exactly once (no other object, no
multipart upload left, each object byte-identical to its file).

Why bytes rather than ``warcio check``: preservation treats the WARCs as opaque files; an object
equal to its file byte for byte is as valid as the file was. A shorter outage, ridden out by
the retries within one run, is tests/preservation/test_ingest.py's.
"""

from __future__ import annotations

import copy
import hashlib
import threading
import time
from typing import Any

import pytest
import sqlalchemy as sa

from harvestflow import services as svc
from harvestflow.settings import Settings
from preservation.errors import TransientError
from preservation.ingest import ingest_job
from preservation.staging import stage_package
from tests.support.objects import MiB
from tests.support.preservation_jobs import make_job, pres_settings  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.slow]

TAG_FILES = (
    "bagit.txt",
    "bag-info.txt",
    "manifest-sha256.txt",
    "manifest-sha512.txt",
    "tagmanifest-sha256.txt",
    "tagmanifest-sha512.txt",
)


def _statuses(engine: sa.Engine, job_id: int) -> tuple[str, dict[str, str]]:
    with engine.connect() as conn:
        package = conn.execute(
            sa.text("SELECT status FROM preservation_packages WHERE job_id = :j"), {"j": job_id}
        ).scalar_one()
        files = conn.execute(
            sa.text("SELECT file_name, status FROM preservation_files WHERE job_id = :j"),
            {"j": job_id},
        ).all()
    return package, {name: status for name, status in files}


def test_s3_stopped_mid_upload_past_the_retries_then_the_rerun_stores_each_file_once(
    pres_settings: Settings,  # noqa: F811
    make_job: Any,  # noqa: F811
    db_engine: sa.Engine,
    s3_client: Any,
) -> None:
    data = copy.deepcopy(pres_settings.data)
    data["preservation"]["retry_attempts"] = 2  # a few seconds of retries: the outage outlasts
    settings = Settings(data, pres_settings.source)
    job = make_job((16 * MiB, 16 * MiB, 16 * MiB))
    stage_package(job.job_id, settings)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = ingest_job(job.job_id, settings)
        except BaseException as exc:  # reported below
            outcome["error"] = exc

    uploading = threading.Thread(target=run)
    uploading.start()
    deadline = time.monotonic() + 60
    while _statuses(db_engine, job.job_id)[1].get(job.metadata_name) != "verified":
        assert time.monotonic() < deadline, "the metadata WARC was never verified"
        time.sleep(0.02)
    weed = svc.seaweedfs_for(settings)
    try:
        assert weed.stop()
        stopped_at = time.monotonic()
        uploading.join(timeout=180)
        assert not uploading.is_alive()
        # the ingest gave up as transient: its task fails, Airflow's retry resumes it
        assert isinstance(outcome.get("error"), TransientError), outcome
        package, files = _statuses(db_engine, job.job_id)
        assert package == "ingesting", package  # never "preserved" with files missing
        assert any(s != "verified" for n, s in files.items() if n != job.metadata_name), files
    finally:
        weed.start()
    back_at = time.monotonic()
    result = ingest_job(job.job_id, settings)  # the task's retry
    recovery = time.monotonic() - back_at
    print(
        f"S3 outage of {back_at - stopped_at:.0f} s during an upload: preserved {recovery:.1f} s"
        " after S3 returned (the task's retry)"
    )
    assert result["status"] == "preserved", result
    assert result["already_verified"] >= 1  # the metadata WARC was not sent again
    bucket = settings.s3.bucket
    prefix = f"packages/hd-{job.harvest_id}/job-{job.job_id}/"
    keys = [
        obj["Key"]
        for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        for obj in page.get("Contents", [])
    ]
    expected = [f"{prefix}data/{name}" for name in job.files] + [prefix + t for t in TAG_FILES]
    assert sorted(keys) == sorted(expected)
    assert not s3_client.list_multipart_uploads(Bucket=bucket).get("Uploads")
    for name, path in job.files.items():
        body = s3_client.get_object(Bucket=bucket, Key=f"{prefix}data/{name}")["Body"].read()
        assert hashlib.sha256(body).digest() == hashlib.sha256(path.read_bytes()).digest(), name
    assert _statuses(db_engine, job.job_id)[0] == "preserved"
