"""The preservation tests' own view of the object stores: damage to an object, a client on the
replica store."""

from __future__ import annotations

from harvestflow.settings import Settings

MiB = 1024 * 1024


def corrupt_one_byte(client, bucket: str, key: str) -> bytes:  # type: ignore[no-untyped-def]
    """Overwrite the object through S3 with one byte changed, same size and same metadata (so
    that only reading it shows the damage); returns the original bytes."""
    obj = client.get_object(Bucket=bucket, Key=key)
    original = obj["Body"].read()
    damaged = bytearray(original)
    damaged[len(damaged) // 2] ^= 0x01
    client.put_object(Bucket=bucket, Key=key, Body=bytes(damaged), Metadata=obj["Metadata"])
    return bytes(original)


def replica_s3_client(settings: Settings):  # type: ignore[no-untyped-def]
    """The suite's own boto3 client on the replica store ([s3_replica]), built from the raw
    settings (not through harvestflow.s3): an independent reader of the second copy."""
    import boto3

    rep = settings["s3_replica"]
    return boto3.client(
        "s3",
        endpoint_url=f"http://{rep['host']}:{rep['s3_port']}",
        aws_access_key_id=rep["access_key"],
        aws_secret_access_key=rep["secret_key"],
        region_name=settings["s3"]["region"],
    )
