"""`harvestflow demo` from a clean data directory runs every workflow through its DAG (dag.test()
on the real PostgreSQL and SeaweedFS) and leaves standard outputs that other tools accept."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from tests.demo_fixture import DemoPlatform

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_demo_runs_the_whole_cycle_from_a_clean_data_dir(demo_platform: DemoPlatform) -> None:
    data, env = demo_platform.data, demo_platform.env
    demo_platform.check()
    stdout = demo_platform.stdout  # the demo ran once for the session
    for dag_id in (
        "broad_crawl_preload",
        "selective_harvest_daily",
        "indexing_chain",
        "preservation_ingest",
        "indexing_merge",
        "daily_qa_stats",
    ):
        assert f"{dag_id}: success" in stdout

    # crawl: one job, complete, WARCs accepted by warcio's own checker
    summaries = list(data.glob("jobs/*/*/*/summary.json"))
    assert len(summaries) == 1
    summary = json.loads(summaries[0].read_text())
    assert summary["status"] == "complete" and summary["urls"] > 10
    warcs = sorted(data.glob("repository/*/*/*.warc.gz"))
    assert {w.name for w in warcs} >= {*summary["warcs"], summary["metadata_warc"]}
    check = subprocess.run(
        [str(Path(sys.executable).parent / "warcio"), "check", *map(str, warcs)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr

    # indexing: the big CDXJ file names the front page, sorted in byte order
    big = data / "index" / "cdx" / "big.cdxj"
    lines = big.read_bytes().splitlines()
    assert lines == sorted(lines)
    assert any(line.startswith(b"test,example-a)/ ") for line in lines) or any(
        b"test,example-a" in line for line in lines
    )

    # preservation: every data WARC is in the bucket with its bytes
    s3 = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{env['HARVESTFLOW_S3__S3_PORT']}",
        aws_access_key_id="harvestflow",
        aws_secret_access_key="harvestflow-secret",
        region_name="us-east-1",
    )
    keys = {
        o["Key"]: o["Size"]
        for o in s3.list_objects_v2(Bucket="harvestflow-preservation")["Contents"]
    }
    for warc in warcs:
        matching = [k for k in keys if k.endswith("/" + warc.name)]
        assert matching, f"{warc.name} not preserved"
        assert keys[matching[0]] == warc.stat().st_size

    # QA: today's report exists with its charts
    reports = list(data.glob("qa/*/index.html"))
    assert reports and "<img" in reports[0].read_text()
    with gzip.open(warcs[0]) as first:
        assert first.read(4) == b"WARC"
