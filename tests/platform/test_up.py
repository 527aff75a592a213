"""`harvestflow up` on a fresh data dir: the UI shows our DAGs, a DAG triggered through Airflow's
REST API succeeds under the real scheduler, its Asset wakes the indexing chain, the metrics
service shows the crawl's and Airflow's own metrics, an unauthenticated request is refused, and
Ctrl-C stops everything `up` started."""

from __future__ import annotations

import re
import signal
import subprocess
import time

import httpx
import pytest

from harvestflow.services.postgres import port_open
from tests.support.platform_cli import _wait_run, isolated_env, start_up

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

OUR_DAGS = {
    "selective_harvest_daily",
    "indexing_chain",
    "preservation_ingest",
    "daily_qa_stats",
    "broad_crawl_preload",
}


def test_up_serves_the_dags_and_a_triggered_harvest_succeeds(tmp_path) -> None:
    env = isolated_env(tmp_path / "var")
    api_port = int(env["HARVESTFLOW_AIRFLOW__PORT"])
    pg_port = int(env["HARVESTFLOW_POSTGRES__PORT"])
    proc, out = start_up(env)
    try:
        harvest_id = int(out.wait_for(r"demo definition id (\d+)", 300).group(1))
        login = out.wait_for(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", 300)
        base, user, password = login.group(1).rstrip("/"), login.group(2), login.group(3)
        metrics = out.wait_for(r"metrics \(Prometheus\): (http://\S+)", 10).group(1)
        assert metrics == f"http://127.0.0.1:{env['HARVESTFLOW_MONITORING__PORT']}/metrics"
        replay = out.wait_for(r"replay \(pywb\): (http://\S+)all/", 10).group(1)
        # the gateway's address is Airflow's host: replay is printed on a site of its own
        assert replay == env["HARVESTFLOW_ACCESS__URL"].replace("//127.0.0.1:", "//localhost:")
        assert httpx.get(replay, timeout=10).status_code == 200

        assert httpx.get(f"{base}/api/v2/dags", timeout=10).status_code in (401, 403)
        token = httpx.post(
            f"{base}/auth/token", json={"username": user, "password": password}, timeout=10
        )
        assert token.status_code == 201, token.text
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            deadline = time.monotonic() + 180
            dag_ids: set[str] = set()
            while time.monotonic() < deadline and not dag_ids >= OUR_DAGS:
                dags = client.get("/api/v2/dags", params={"limit": 100}).json()["dags"]
                dag_ids = {d["dag_id"] for d in dags}
                time.sleep(3)
            assert dag_ids >= OUR_DAGS
            # the crawl pools of the settings, the continuous crawl's own among them
            pools = {
                p["name"]: p["slots"]
                for p in client.get("/api/v2/pools", params={"limit": 100}).json()["pools"]
            }
            assert {"crawl_high": 2, "crawl_low": 1, "crawl_continuous": 1}.items() <= pools.items()

            run = client.post(
                "/api/v2/dags/selective_harvest_daily/dagRuns",
                json={"logical_date": None, "conf": {"harvest_id": harvest_id}},
            )
            assert run.status_code == 200, run.text
            run_id = run.json()["dag_run_id"]
            assert _wait_run(client, "selective_harvest_daily", run_id, 600) == "success"

            # the harvest's Asset event wakes the indexing chain through the scheduler
            deadline = time.monotonic() + 240
            woken = []
            while time.monotonic() < deadline and not woken:
                runs = client.get("/api/v2/dags/indexing_chain/dagRuns").json()["dag_runs"]
                woken = [r for r in runs if r["run_type"] == "asset_triggered"]
                time.sleep(3)
            assert woken, "indexing_chain was not woken by the harvest Asset"

        # the crawl's gauges (pushed by the crawler) and Airflow's own metrics (StatsD)
        scraped = httpx.get(metrics, timeout=30).text
        assert re.search(r'^harvestflow_crawl_urls_done\{job="\d+"\} [1-9]', scraped, re.M)
        assert re.search(
            r'^airflow_ti_finish_total\{dag_id="selective_harvest_daily",state="success",',
            scraped,
            re.M,
        ), [line for line in scraped.splitlines() if line.startswith("airflow_ti_finish")]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(180)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, "".join(out.lines)[-3000:]
    assert not port_open("127.0.0.1", api_port)
    assert not port_open("127.0.0.1", pg_port)
    assert not port_open("127.0.0.1", int(env["HARVESTFLOW_MONITORING__PORT"]))
    assert not port_open(
        "127.0.0.1", int(env["HARVESTFLOW_ACCESS__URL"].rsplit(":", 1)[1].strip("/"))
    )
