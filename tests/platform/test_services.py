"""The embedded services start idempotently, answer, and the schema migrates once."""

from __future__ import annotations

import sqlalchemy as sa

from harvestflow import db, services


def test_start_all_is_idempotent_and_both_services_answer(services) -> None:
    assert services.postgres_embedded and services.s3_embedded
    assert services_started_again(services) == []
    statuses = {s.name: s for s in services_status(services)}
    assert statuses["postgresql"].running
    assert statuses["s3"].running


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
