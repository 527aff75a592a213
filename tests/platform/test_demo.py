"""`harvestflow demo` from a clean data directory runs every workflow through its DAG (dag.test()
on the real PostgreSQL and SeaweedFS) and leaves standard outputs that other tools accept."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from tests.support.demo_fixture import DemoPlatform

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

DAG_IDS = (
    "broad_crawl_preload",
    "selective_harvest_daily",
    "indexing_chain",
    "preservation_ingest",
    "indexing_merge",
    "daily_qa_stats",
)


def task_states(stdout: str) -> dict[str, dict[str, str]]:
    """{dag_id: {task: state}} from the demo's '[demo]   DAG: …' / '[demo]     task T: S' lines."""
    runs: dict[str, dict[str, str]] = {}
    current = None
    for line in stdout.splitlines():
        header = re.fullmatch(r"\[demo\]   (\w+): (success|FAILED) .*", line)
        if header:
            current = runs.setdefault(header.group(1), {})
            continue
        task = re.fullmatch(r"\[demo\]     task (.+): (\w+)", line)
        if task:
            assert current is not None, line
            current[task.group(1)] = task.group(2)
    return runs


def test_demo_runs_the_whole_cycle_from_a_clean_data_dir(demo_platform: DemoPlatform) -> None:
    data, env = demo_platform.data, demo_platform.env
    demo_platform.check()
    stdout = demo_platform.stdout  # the demo ran once for the session
    runs = task_states(stdout)
    assert list(runs) == list(DAG_IDS)  # every run, in order, each listing its tasks
    for dag_id in DAG_IDS:
        assert f"[demo]   {dag_id}: success (" in stdout
        assert runs[dag_id], f"{dag_id}: no task states printed"
        bad = {t: s for t, s in runs[dag_id].items() if s not in ("success", "skipped")}
        assert bad == {}, f"{dag_id}: {bad}"
    harvest = runs["selective_harvest_daily"]
    for task in ("harvest_job.prepare[0]", "harvest_job.crawl[0]", "harvest_job.record[0]"):
        assert harvest[task] == "success", task
    assert harvest["advance_schedules"] == "success"
    indexed = {t: s for t, s in runs["indexing_chain"].items() if t.startswith("process_file[")}
    assert len(indexed) >= 2 and set(indexed.values()) == {"success"}  # data + metadata WARC
    assert runs["indexing_chain"]["chain_done"] == "success"
    preserved = {t: s for t, s in runs["preservation_ingest"].items() if t.startswith("ingest_")}
    ((task, state),) = preserved.items()  # the one demo job, named by its id
    assert task.startswith("ingest_job[job ") and state == "success"
    assert runs["preservation_ingest"]["report"] == "success"

    # crawl: the demo's one job (other tests of the session's platform, such as the curator
    # pages' crawl controls, may have added theirs since), complete, WARCs accepted by warcio
    found = re.fullmatch(r"ingest_job\[job (\d+)\]", task)
    assert found, task
    summaries = list(data.glob(f"jobs/*/{found.group(1)}/*/summary.json"))
    assert len(summaries) == 1
    summary = json.loads(summaries[0].read_text())
    assert summary["status"] == "complete" and summary["urls"] > 10
    names = {*summary["warcs"], summary["metadata_warc"]}
    warcs = sorted(w for w in data.glob("repository/*/*/*.warc.gz") if w.name in names)
    assert {w.name for w in warcs} == names
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
    front = f"test,example-a:{env['HARVESTFLOW_SAMPLESITE__PORT']})/ ".encode()
    assert any(line.startswith(front) for line in lines), lines[:20]

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


@pytest.mark.services
def test_the_demo_prints_the_replay_sites_address_not_the_gateways_on_airflows_host(
    db_engine: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gateway's own address on Airflow's host only redirects (307) to the replay site of
    its own: the demo's "where everything is" names the replay site."""
    from access.config import AccessConfig
    from app.demo import run as demo
    from harvestflow import settings as settings_mod

    monkeypatch.setenv("HARVESTFLOW_AIRFLOW__HOST", "127.0.0.1")
    monkeypatch.setenv("HARVESTFLOW_ACCESS__URL", "http://127.0.0.1:18090/")
    settings_mod.reset()
    try:
        settings = settings_mod.get_settings()
        demo.print_outputs(settings, harvest_id=-1)  # no such harvest: no jobs listed
        site = AccessConfig.from_settings(settings).url
    finally:
        settings_mod.reset()
    out = capsys.readouterr().out
    assert site == "http://localhost:18090/"
    assert f"  {site}all/*/<url> lists the captures of a URL, {site}all/<ts>/<url> replays" in out
    assert "127.0.0.1:18090" not in out
