"""harvestflow.s3.s3_client: the one S3 client factory, checked against the real embedded store
(read back through the suite's own independent boto3 client), and no other place builds one."""

from __future__ import annotations

import re
import uuid

from harvestflow import settings as settings_mod
from tests.support.source_tree import PLATFORM_PACKAGES, python_files

PACKAGES = (*PLATFORM_PACKAGES, "bench")
# peers of the benchmarks run as their users run them: boto3 alone, never our factory
PEERS = {"bench/ingest/peer_upload.py"}
BUILDS = re.compile(r"boto3\.(?:client|resource|session\.Session|Session)\(")


def test_the_factory_talks_to_the_store_with_the_callers_options(
    services: settings_mod.Settings, fresh_bucket: str, s3_client: object
) -> None:
    from harvestflow.s3 import s3_client as factory

    client = factory(services, connect_timeout=3, retries={"max_attempts": 1})
    assert client.meta.config.connect_timeout == 3
    assert client.meta.config.s3["addressing_style"] == "path"
    key = f"probe/{uuid.uuid4().hex}"
    client.put_object(Bucket=fresh_bucket, Key=key, Body=b"hello")
    got = s3_client.get_object(Bucket=fresh_bucket, Key=key)  # type: ignore[attr-defined]
    assert got["Body"].read() == b"hello"


def test_no_module_builds_its_own_client() -> None:
    found = []
    for path, rel in python_files(PACKAGES):
        if rel == "harvestflow/s3.py" or rel in PEERS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BUILDS.search(line):
                found.append(f"{rel}:{number}: {line.strip()}")
    assert not found, "S3 clients built by hand; use harvestflow.s3.s3_client:\n" + "\n".join(found)
