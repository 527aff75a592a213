"""Ingest into SeaweedFS: order, verification, idempotency, manual queue, S3 outage."""

from __future__ import annotations

import copy
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from harvestflow import services as svc
from harvestflow.settings import Settings
from preservation.ingest import ingest_job
from preservation.staging import stage_package

MiB = 1024 * 1024


def _objects(s3_client: Any, bucket: str) -> dict[str, dict[str, Any]]:
    out = {}
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = obj
    return out


def _sha256_of_object(s3_client: Any, bucket: str, key: str) -> str:
    return hashlib.sha256(s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()).hexdigest()


def _files(db_engine: sa.Engine, job_id: int) -> dict[str, Any]:
    with db_engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT * FROM preservation_files WHERE job_id = :j"), {"j": job_id}
        ).mappings()
        return {r["file_name"]: dict(r) for r in rows}


def _state(db_engine: sa.Engine) -> tuple[list[Any], ...]:
    with db_engine.connect() as conn:
        return tuple(
            conn.execute(sa.text(sql)).all()
            for sql in (
                "SELECT * FROM arks ORDER BY ark",
                "SELECT * FROM preservation_packages ORDER BY job_id",
                "SELECT * FROM preservation_files ORDER BY job_id, file_name",
                "SELECT count(*) FROM preservation_events",
            )
        )


def test_full_ingest_metadata_first_then_data_all_verified(
    pres_settings: Settings, make_job, db_engine: sa.Engine, s3_client: Any
) -> None:  # type: ignore[no-untyped-def]
    job = make_job((3 * MiB, 7 * MiB, 12 * MiB))
    bucket = pres_settings.s3.bucket
    result = ingest_job(job.job_id, pres_settings)
    assert result["status"] == "preserved", result
    assert result["uploaded"] == 4 + 6  # 4 WARCs + 6 tag files
    prefix = f"packages/hd-{job.harvest_id}/job-{job.job_id}/"
    objects = _objects(s3_client, bucket)
    assert set(objects) == {f"{prefix}data/{n}" for n in job.files} | {
        prefix + t
        for t in (
            "bagit.txt",
            "bag-info.txt",
            "manifest-sha256.txt",
            "manifest-sha512.txt",
            "tagmanifest-sha256.txt",
            "tagmanifest-sha512.txt",
        )
    }
    files = _files(db_engine, job.job_id)
    for name, path in job.files.items():
        key = f"{prefix}data/{name}"
        assert (
            _sha256_of_object(s3_client, bucket, key)
            == hashlib.sha256(path.read_bytes()).hexdigest()
        )
        head = s3_client.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        assert head["Metadata"]["ark"] == files[name]["ark"]
        assert head["Metadata"]["job-id"] == str(job.job_id)
        assert head["Metadata"]["harvest-id"] == str(job.harvest_id)
        assert files[name]["status"] == "verified" and files[name]["reread"]
        assert head["ChecksumSHA256"] == files[name]["s3_checksum"]
        assert path.exists()  # local copies kept unless configured
    # the 12 MiB file went up in 3 parts of 5 MiB: composite checksum
    big = next(n for n, p in job.files.items() if p.stat().st_size == 12 * MiB)
    assert files[big]["s3_checksum"].endswith("-3")
    # metadata accepted (verified) before any data file was sent
    meta_verified = files[job.metadata_name]["verified_at"]
    for row in files.values():
        if row["role"] == "data":
            assert row["uploaded_at"] > meta_verified
    with db_engine.connect() as conn:
        status, ark, bag_path = conn.execute(
            sa.text("SELECT status, ark, bag_path FROM preservation_packages WHERE job_id = :j"),
            {"j": job.job_id},
        ).one()
        n_arks = conn.execute(sa.text("SELECT count(*) FROM arks")).scalar_one()
    assert status == "preserved" and ark == result["ark"]
    assert n_arks == 1 + 4
    # the temporary zone is emptied once the package is preserved
    assert bag_path and not Path(bag_path).exists()


def test_rerun_changes_nothing_and_a_lost_db_update_is_adopted_not_rewritten(
    pres_settings: Settings, make_job, db_engine: sa.Engine, s3_client: Any
) -> None:  # type: ignore[no-untyped-def]
    job = make_job((7 * MiB,))
    bucket = pres_settings.s3.bucket
    assert ingest_job(job.job_id, pres_settings)["status"] == "preserved"
    state = _state(db_engine)
    objects = _objects(s3_client, bucket)
    again = ingest_job(job.job_id, pres_settings)
    assert again["status"] == "preserved" and again["uploaded"] == 0
    assert _state(db_engine) == state
    assert _objects(s3_client, bucket) == objects
    # a worker that died after storing a file but before recording it: the re-run must adopt
    # the stored object (no second write, no second ARK) and finish the package
    data_name = next(n for n in job.files if "metadata" not in n)
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE preservation_files SET status = 'pending', verified_at = NULL"
                " WHERE job_id = :j AND file_name = :n"
            ),
            {"j": job.job_id, "n": data_name},
        )
        conn.execute(
            sa.text("UPDATE preservation_packages SET status = 'ingesting' WHERE job_id = :j"),
            {"j": job.job_id},
        )
    resumed = ingest_job(job.job_id, pres_settings)
    assert resumed["status"] == "preserved"
    assert resumed["uploaded"] == 0 and resumed["adopted"] == 1
    assert _objects(s3_client, bucket) == objects  # same ETags and dates: nothing rewritten
    assert _state(db_engine)[0] == state[0]  # same ARKs


def test_file_corrupted_after_staging_goes_to_manual_queue_with_reason(
    pres_settings: Settings, make_job, db_engine: sa.Engine, s3_client: Any
) -> None:  # type: ignore[no-untyped-def]
    job = make_job((2 * MiB, 9 * MiB))
    staged = stage_package(job.job_id, pres_settings)
    victim = next(n for n, p in job.files.items() if p.stat().st_size == 9 * MiB)
    with (Path(staged["bag_path"]) / "data" / victim).open("r+b") as fh:
        fh.seek(6 * MiB + 17)
        byte = fh.read(1)
        fh.seek(6 * MiB + 17)
        fh.write(bytes([byte[0] ^ 0xFF]))
    result = ingest_job(job.job_id, pres_settings)
    assert result["status"] == "manual"
    assert "checksum_mismatch" in result["error"] and victim in result["error"]
    files = _files(db_engine, job.job_id)
    assert files[victim]["status"] == "manual" and "sha256" in files[victim]["error"]
    assert files[job.metadata_name]["status"] == "verified"
    with db_engine.connect() as conn:
        status, error = conn.execute(
            sa.text("SELECT status, error FROM preservation_packages WHERE job_id = :j"),
            {"j": job.job_id},
        ).one()
    assert status == "manual" and victim in error
    keys = set(_objects(s3_client, pres_settings.s3.bucket))
    assert not any(k.endswith(victim) for k in keys)  # never committed
    assert not any(k.endswith("tagmanifest-sha256.txt") for k in keys)  # package incomplete
    before = _state(db_engine)
    assert ingest_job(job.job_id, pres_settings)["status"] == "manual"  # stays queued
    assert _state(db_engine) == before


def test_object_already_stored_with_other_content_is_never_overwritten(
    pres_settings: Settings, make_job, db_engine: sa.Engine, s3_client: Any
) -> None:  # type: ignore[no-untyped-def]
    job = make_job((1 * MiB,))
    data_name = next(n for n in job.files if "metadata" not in n)
    key = f"packages/hd-{job.harvest_id}/job-{job.job_id}/data/{data_name}"
    s3_client.put_object(Bucket=pres_settings.s3.bucket, Key=key, Body=b"someone else's bytes")
    result = ingest_job(job.job_id, pres_settings)
    assert result["status"] == "manual" and "storage_conflict" in result["error"]
    body = s3_client.get_object(Bucket=pres_settings.s3.bucket, Key=key)["Body"].read()
    assert body == b"someone else's bytes"


def test_local_copies_removed_only_when_configured_and_verified(
    pres_settings: Settings, make_job, db_engine: sa.Engine
) -> None:  # type: ignore[no-untyped-def]
    data = copy.deepcopy(pres_settings.data)
    data["preservation"]["delete_local_after_verify"] = True
    settings = Settings(data, pres_settings.source)
    job = make_job((1 * MiB,))
    assert ingest_job(job.job_id, settings)["status"] == "preserved"
    assert not any(p.exists() for p in job.files.values())
    files = _files(db_engine, job.job_id)
    assert all(files[n]["local_deleted_at"] is not None for n in job.files)


@pytest.mark.slow
def test_s3_server_stopped_mid_ingest_then_restarted_completes_without_loss_or_duplicates(
    pres_settings: Settings, make_job, db_engine: sa.Engine, s3_client: Any
) -> None:  # type: ignore[no-untyped-def]
    job = make_job((16 * MiB, 16 * MiB, 16 * MiB, 16 * MiB))
    stage_package(job.job_id, pres_settings)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = ingest_job(job.job_id, pres_settings)
        except BaseException as exc:  # reported below
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until the metadata WARC is accepted
        if _files(db_engine, job.job_id)[job.metadata_name]["status"] == "verified":
            break
        time.sleep(0.02)
    else:
        pytest.fail("metadata WARC never verified")
    weed = svc.seaweedfs_for(pres_settings)
    assert weed.stop()
    stopped_during = {n: r["status"] for n, r in _files(db_engine, job.job_id).items()}
    time.sleep(3)
    weed.start()
    worker.join(timeout=240)
    assert not worker.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"]["status"] == "preserved"
    # the outage really hit the ingest: data files were still to do, retries were logged
    assert any(s != "verified" for n, s in stopped_during.items() if n in job.files)
    with db_engine.connect() as conn:
        retries = conn.execute(
            sa.text("SELECT count(*) FROM preservation_events WHERE job_id = :j AND kind='retry'"),
            {"j": job.job_id},
        ).scalar_one()
        n_arks = conn.execute(sa.text("SELECT count(*) FROM arks")).scalar_one()
    assert retries > 0
    assert n_arks == 1 + 5
    objects = _objects(s3_client, pres_settings.s3.bucket)
    prefix = f"packages/hd-{job.harvest_id}/job-{job.job_id}/"
    assert len(objects) == 5 + 6 and all(k.startswith(prefix) for k in objects)
    for name, path in job.files.items():
        assert _sha256_of_object(s3_client, pres_settings.s3.bucket, f"{prefix}data/{name}") == (
            hashlib.sha256(path.read_bytes()).hexdigest()
        )
    uploads = s3_client.list_multipart_uploads(Bucket=pres_settings.s3.bucket)
    assert not uploads.get("Uploads")  # no half-finished upload left behind


def test_seaweedfs_checks_sha256_and_the_probe_leaves_nothing(
    pres_settings: Settings, s3_client: Any
) -> None:  # type: ignore[no-untyped-def]
    from preservation import s3store
    from preservation.config import PreservationConfig

    cfg = PreservationConfig.from_settings(pres_settings)
    store = s3store.ObjectStore(
        s3store.make_client(pres_settings, cfg), pres_settings.s3.bucket, cfg
    )
    s3store._SERVER_CHECKS.clear()
    assert store.server_checks_sha256() is True
    assert _objects(s3_client, pres_settings.s3.bucket) == {}


def test_an_upload_is_signed_without_hashing_its_body_again_its_checksum_header_signed(
    pres_settings: Settings, s3_client: Any, tmp_path: Path
) -> None:
    from preservation import s3store
    from preservation.config import PreservationConfig

    cfg = PreservationConfig.from_settings(pres_settings)
    client = s3store.make_client(pres_settings, cfg)
    sent: list[dict[str, str]] = []

    def keep(request: Any, **_: Any) -> None:
        sent.append(
            {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        )

    client.meta.events.register("before-send.s3.PutObject", keep)
    store = s3store.ObjectStore(client, pres_settings.s3.bucket, cfg)
    body = b"a WARC's bytes" * 1000
    path = tmp_path / "small.warc.gz"
    path.write_bytes(body)
    sha = hashlib.sha256(body).hexdigest()
    store.upload(path, "unsigned/small.warc.gz", size=len(body), sha256_hex=sha, metadata={})
    headers = sent[-1]  # the probe PUT came first
    assert headers["X-Amz-Content-SHA256"] == "UNSIGNED-PAYLOAD"
    signed = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert "x-amz-checksum-sha256" in signed
    assert _sha256_of_object(s3_client, pres_settings.s3.bucket, "unsigned/small.warc.gz") == sha


def test_a_streamed_put_retried_after_a_broken_attempt_stores_the_whole_file(
    pres_settings: Settings, s3_client: Any, tmp_path: Path
) -> None:
    from botocore.exceptions import ConnectionClosedError

    from preservation import s3store
    from preservation.config import PreservationConfig

    cfg = PreservationConfig.from_settings(pres_settings)
    cfg = PreservationConfig(**{**cfg.__dict__, "retry_base_delay_s": 0.01})
    client = s3store.make_client(pres_settings, cfg)
    broken: list[int] = []

    def break_once(request: Any, **_: Any) -> None:
        if not broken and "streamed/" in request.url:  # not the checksum probe
            broken.append(len(request.body.read(1000)))  # the file is partly read, then lost
            raise ConnectionClosedError(endpoint_url=request.url)

    client.meta.events.register("before-send.s3.PutObject", break_once)
    store = s3store.ObjectStore(client, pres_settings.s3.bucket, cfg)
    body = os.urandom(3 * MiB)  # below the 6 MiB threshold: one PUT, streamed from the file
    path = tmp_path / "streamed.warc.gz"
    path.write_bytes(body)
    sha = hashlib.sha256(body).hexdigest()
    store.upload(path, "streamed/one.warc.gz", size=len(body), sha256_hex=sha, metadata={})
    assert broken == [1000]
    assert _sha256_of_object(s3_client, pres_settings.s3.bucket, "streamed/one.warc.gz") == sha


@pytest.mark.parametrize("server_checks", [True, False], ids=["store-checks", "local-hash"])
def test_corruption_is_caught_whether_or_not_the_store_checks_checksums(
    pres_settings: Settings,
    make_job,
    db_engine: sa.Engine,
    s3_client: Any,
    monkeypatch: pytest.MonkeyPatch,
    server_checks: bool,
) -> None:  # type: ignore[no-untyped-def]
    from preservation import s3store

    # pretend (or not) that the store ignores x-amz-checksum-sha256: then we hash locally
    monkeypatch.setattr(s3store.ObjectStore, "server_checks_sha256", lambda self: server_checks)
    job = make_job((1 * MiB, 8 * MiB))  # one single PUT, one multipart
    staged = stage_package(job.job_id, pres_settings)
    for name, path in job.files.items():
        if "metadata" not in name:
            with (Path(staged["bag_path"]) / "data" / name).open("r+b") as fh:
                fh.seek(path.stat().st_size - 1)
                last = fh.read(1)
                fh.seek(path.stat().st_size - 1)
                fh.write(bytes([last[0] ^ 0xFF]))  # same size, one byte flipped
    result = ingest_job(job.job_id, pres_settings)
    assert result["status"] == "manual" and "changed after staging" in result["error"]
    keys = _objects(s3_client, pres_settings.s3.bucket)
    assert [k for k in keys if "/data/" in k] == [
        f"packages/hd-{job.harvest_id}/job-{job.job_id}/data/{job.metadata_name}"
    ]
