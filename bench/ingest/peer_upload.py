"""The ingest benchmark's peer: a plain boto3 ``upload_file`` loop, as a user uploads files.

Why this shape: boto3's defaults are what its users get (8 MiB multipart threshold and parts,
10 threads, its default checksum); one new bucket, every file under its own name, nothing else
(no hashes of its own, no read-back). Only boto3 and the standard library are imported.

    python bench/ingest/peer_upload.py OUT FILE...   (endpoint and keys: BENCH_S3_* variables)
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import boto3
from botocore.config import Config


def main(argv: list[str]) -> int:
    out, files = Path(argv[0]), argv[1:]
    client = boto3.client(
        "s3",
        endpoint_url=os.environ["BENCH_S3_ENDPOINT"],
        aws_access_key_id=os.environ["BENCH_S3_ACCESS_KEY"],
        aws_secret_access_key=os.environ["BENCH_S3_SECRET_KEY"],
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}),
    )
    bucket = f"peer-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    for path in files:
        client.upload_file(path, bucket, f"peer/{Path(path).name}")
    (out / "bucket.txt").write_text(bucket + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
