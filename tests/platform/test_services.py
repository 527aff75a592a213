"""The embedded services start idempotently, answer, and the schema migrates once."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from harvestflow import db, services
from harvestflow.services import EmbeddedPostgres, EmbeddedSeaweedFS, ServiceError, start_all


def test_start_all_is_idempotent_and_both_services_answer(services) -> None:
    assert services.postgres_embedded and services.s3_embedded
    assert services_started_again(services) == []
    statuses = {s.name: s for s in services_status(services)}
    assert statuses["postgresql"].running
    assert statuses["s3"].running


def test_the_servers_start_together(services, monkeypatch) -> None:
    """start_all starts PostgreSQL and the object stores at once: PostgreSQL's start here
    waits for SeaweedFS's to have begun, which a start one after the other never does (it
    would wait for ever; the 60 s bound only turns that into a failure). The real starts
    run after (the session's servers: nothing to start)."""
    weed_began = threading.Event()
    real_pg, real_weed = EmbeddedPostgres.start, EmbeddedSeaweedFS.start

    def pg_start(self: EmbeddedPostgres) -> bool:
        if not weed_began.wait(60):
            raise AssertionError("SeaweedFS's start did not begin while PostgreSQL's ran")
        return real_pg(self)

    def weed_start(self: EmbeddedSeaweedFS, *args: object) -> bool:
        weed_began.set()
        return real_weed(self)

    monkeypatch.setattr(EmbeddedPostgres, "start", pg_start)
    monkeypatch.setattr(EmbeddedSeaweedFS, "start", weed_start)
    assert start_all(services) == []


def test_a_failed_start_raises_the_first_servers_error_and_stops_what_started_beside_it(
    services, monkeypatch
) -> None:
    """When PostgreSQL's start fails, that error is raised (the sequential order's first)
    once SeaweedFS's start, begun beside it, has ended, and SeaweedFS is stopped again: the
    sequential start would not have started it. A SeaweedFS failure is raised as such."""
    began: list[str] = []
    stopped: list[str] = []

    def pg_start(self: EmbeddedPostgres) -> bool:
        raise ServiceError("postgres failed")

    def weed_start(self: EmbeddedSeaweedFS, *args: object) -> bool:
        began.append(self.section)
        return True

    monkeypatch.setattr(EmbeddedPostgres, "start", pg_start)
    monkeypatch.setattr(EmbeddedSeaweedFS, "start", weed_start)
    monkeypatch.setattr(EmbeddedSeaweedFS, "stop", lambda self, *a: stopped.append(self.section))
    with pytest.raises(ServiceError, match="postgres failed"):
        start_all(services)
    assert "s3" in began
    assert sorted(stopped) == sorted(began)

    def weed_fails(self: EmbeddedSeaweedFS, *args: object) -> bool:
        raise ServiceError("seaweedfs failed")

    monkeypatch.setattr(EmbeddedPostgres, "start", lambda self: False)
    monkeypatch.setattr(EmbeddedSeaweedFS, "start", weed_fails)
    with pytest.raises(ServiceError, match="seaweedfs failed"):
        start_all(services)


def services_started_again(settings):
    return services.start_all(settings)


def services_status(settings):
    return services.status_all(settings)


def test_migrate_twice_changes_nothing(db_engine) -> None:
    assert db.migrate(db_engine) == []
    with db_engine.connect() as conn:
        versions = conn.execute(sa.text("SELECT version FROM schema_versions")).scalars().all()
        tables = set(sa.inspect(conn).get_table_names())
    assert "001" in versions
    assert {"jobs", "historyinfo", "domains", "configurations", "index_manifest"} <= tables


def test_job_status_moves_only_forward(db_engine) -> None:
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (harvest_id, name, kind) VALUES (1, 'h', 'partial')"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel, template_name,"
                " template, seedlist) VALUES (1, 1, 0, 3, 'CIBLEE', 't', '{}', '')"
            )
        )
    try:
        with db_engine.begin() as conn:
            conn.execute(sa.text("UPDATE jobs SET status = 1"))
    except sa.exc.DBAPIError as exc:
        assert "may not move back" in str(exc)
    else:
        raise AssertionError("a job moved back from DONE to SUBMITTED")


def test_s3_bucket_round_trip(s3_client, fresh_bucket) -> None:
    s3_client.put_object(Bucket=fresh_bucket, Key="a/b", Body=b"payload")
    assert s3_client.get_object(Bucket=fresh_bucket, Key="a/b")["Body"].read() == b"payload"


def test_the_embedded_s3_serves_many_buckets(s3_client) -> None:
    """Each bucket is a SeaweedFS collection with volumes of its own: the 16th bucket's first
    PutObject used to fail with InternalError (7 volumes a collection, 100 slots)."""
    names = [f"many-buckets-{i:03d}" for i in range(40)]
    try:
        for name in names:
            s3_client.create_bucket(Bucket=name)
            s3_client.put_object(Bucket=name, Key="k", Body=name.encode())
        for name in names:
            assert s3_client.get_object(Bucket=name, Key="k")["Body"].read() == name.encode()
    finally:
        for name in names:
            try:
                s3_client.delete_object(Bucket=name, Key="k")
                s3_client.delete_bucket(Bucket=name)
            except Exception:  # cleanup only: a bucket never made is not there
                pass


def test_the_embedded_server_accepts_the_configured_connections(services, db_engine) -> None:
    """``[postgres] max_connections`` (the session sets 250, not the default) reaches the server:
    a cluster of crawlers needs more than the default (docs/scaling.md)."""
    assert int(services["postgres"]["max_connections"]) == 250
    with db_engine.connect() as conn:
        assert conn.execute(sa.text("SHOW max_connections")).scalar() == "250"


def test_the_session_cluster_commits_without_waiting_for_the_disk_and_keeps_fsync_on(
    services, db_engine
) -> None:
    """The tests' own cluster (tests/support's template) takes ``synchronous_commit`` and
    ``full_page_writes`` off, so that a test's commits and database resets do not wait for a
    busy disk; the server's ``fsync=on`` (the product's, on its command line) stays."""
    with db_engine.connect() as conn:
        shown = {
            name: conn.execute(sa.text(f"SHOW {name}")).scalar()
            for name in ("synchronous_commit", "full_page_writes", "fsync", "max_wal_size")
        }
    assert shown == {
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "fsync": "on",
        "max_wal_size": "192MB",
    }


def test_a_seaweedfs_stop_ends_within_its_drain_and_every_object_is_there_after_a_restart(
    tmp_path,
) -> None:
    """SeaweedFS idles ~15 s after SIGTERM (its filer waits for in-process gRPC streams), which
    pushed `up`'s stop past ``stop_grace_s`` + 15 s; the stop now kills it after a short drain.
    What was stored before the stop (small objects and a multipart one) reads back the same
    as soon as the next start returns (which took ~20 s on existing data before: the master's
    10 s election timeout), and the server takes new writes."""
    import hashlib
    import io
    import time

    import boto3
    import boto3.s3.transfer

    from harvestflow.services.seaweedfs import STOP_DRAIN_S, EmbeddedSeaweedFS
    from tests.support.environment import free_port

    weed = EmbeddedSeaweedFS(
        tmp_path / "s3",
        s3_port=free_port(),
        master_port=free_port(),
        volume_port=free_port(),
        filer_port=free_port(),
    )
    weed.start()
    try:
        client = boto3.client(
            "s3",
            endpoint_url=weed.endpoint_url,
            aws_access_key_id=weed.access_key,
            aws_secret_access_key=weed.secret_key,
            region_name="us-east-1",
        )
        client.create_bucket(Bucket="kept-objects")
        stored = {f"small/{i}": f"object {i}".encode() * (i + 1) for i in range(20)}
        for key, body in stored.items():
            client.put_object(Bucket="kept-objects", Key=key, Body=body)
        big = bytes(range(256)) * (12 * 4096)  # 12 MiB: a multipart upload of 3 parts
        client.upload_fileobj(
            io.BytesIO(big),
            "kept-objects",
            "big",
            Config=boto3.s3.transfer.TransferConfig(
                multipart_threshold=5 * 2**20, multipart_chunksize=5 * 2**20
            ),
        )
        stored["big"] = big
        began = time.monotonic()
        assert weed.stop()
        took = time.monotonic() - began
        print(f"SeaweedFS stopped in {took:.1f} s (drain {STOP_DRAIN_S} s)")
        assert weed.pid() is None
        assert took < STOP_DRAIN_S + 5, took  # the old stop waited ~15 s for the filer
        began = time.monotonic()
        weed.start()
        print(f"SeaweedFS started again in {time.monotonic() - began:.1f} s")
        for key, body in stored.items():
            got = client.get_object(Bucket="kept-objects", Key=key)["Body"].read()
            assert hashlib.sha256(got).digest() == hashlib.sha256(body).digest(), key
        client.put_object(Bucket="kept-objects", Key="after", Body=b"after the restart")
        assert client.get_object(Bucket="kept-objects", Key="after")["Body"].read() == (
            b"after the restart"
        )
    finally:
        weed.stop()
