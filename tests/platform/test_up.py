"""`harvestflow up` on a fresh data dir (the session's shared platform): the UI shows our DAGs, a
DAG triggered through Airflow's REST API succeeds under the real scheduler, its Asset wakes the
indexing chain, the metrics service shows the crawl's and Airflow's own metrics, an
unauthenticated request is refused, and Ctrl-C stops everything `up` started (when the shared
platform is stopped: tests/support/platform_up.py)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from tests.support.platform_cli import _wait_run, trigger, wait_dags
from tests.support.platform_up import SharedUp

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

OUR_DAGS = {
    "selective_harvest_daily",
    "indexing_chain",
    "preservation_ingest",
    "daily_qa_stats",
    "broad_crawl_preload",
}


def test_up_serves_the_dags_and_a_triggered_harvest_succeeds(shared_up: SharedUp) -> None:
    env, out = shared_up.env, shared_up.out
    harvest_id = int(out.wait_for(r"demo definition id (\d+)", 300).group(1))
    login = out.wait_for(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", 300)
    base, user, password = login.group(1).rstrip("/"), login.group(2), login.group(3)
    metrics = out.wait_for(r"metrics \(Prometheus\): (http://\S+)", 10).group(1)
    assert metrics == f"http://127.0.0.1:{env['HARVESTFLOW_MONITORING__PORT']}/metrics"
    replay = out.wait_for(r"replay \(pywb\): (http://\S+)all/", 10).group(1)
    # the gateway's address is Airflow's host: replay is printed on a site of its own
    assert replay == env["HARVESTFLOW_ACCESS__URL"].replace("//127.0.0.1:", "//localhost:")
    assert httpx.get(replay, timeout=60).status_code == 200

    assert httpx.get(f"{base}/api/v2/dags", timeout=60).status_code in (401, 403)
    token = httpx.post(
        f"{base}/auth/token", json={"username": user, "password": password}, timeout=60
    )
    assert token.status_code == 201, token.text
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        wait_dags(client, OUR_DAGS)
        # the crawl pools of the settings, the continuous crawl's own among them
        pools = {
            p["name"]: p["slots"]
            for p in client.get("/api/v2/pools", params={"limit": 100}).json()["pools"]
        }
        assert {"crawl_high": 2, "crawl_low": 1, "crawl_continuous": 1}.items() <= pools.items()

        # the platform is shared: only an indexing run woken after this harvest counts
        runs = client.get("/api/v2/dags/indexing_chain/dagRuns").json()["dag_runs"]
        earlier = {r["dag_run_id"] for r in runs}
        # the one-off DAG (no schedule of its own to wait behind) on the demo definition; the
        # selective DAG the same way: tests/plugins/test_curator_browser.py
        run_id = trigger(client, "oneoff_harvest", {"harvest_id": harvest_id})
        assert _wait_run(client, "oneoff_harvest", run_id, 600) == "success"

        # the harvest's Asset event wakes the indexing chain through the scheduler
        deadline = time.monotonic() + 240
        woken: list[dict[str, object]] = []
        while time.monotonic() < deadline and not woken:
            runs = client.get("/api/v2/dags/indexing_chain/dagRuns").json()["dag_runs"]
            woken = [
                r
                for r in runs
                if r["run_type"] == "asset_triggered" and r["dag_run_id"] not in earlier
            ]
            time.sleep(1)
        assert woken, "indexing_chain was not woken by the harvest Asset"

    # the harvest needed no triggerer, and `up` started none: no DAG of ours defers a
    # task ([airflow] triggerer = false; tests/dags/test_dag_integrity.py)
    logs = Path(env["HARVESTFLOW_DATA_DIR"]) / "airflow" / "logs" / "components"
    assert sorted(p.stem for p in logs.glob("*.log")) == [
        "api-server",
        "dag-processor",
        "scheduler",
    ]

    # the crawl's gauges (pushed by the crawler) and Airflow's own metrics (StatsD)
    scraped = httpx.get(metrics, timeout=30).text
    assert re.search(r'^harvestflow_crawl_urls_done\{job="\d+"\} [1-9]', scraped, re.M)
    assert re.search(
        r'^airflow_ti_finish_total\{dag_id="oneoff_harvest",state="success",',
        scraped,
        re.M,
    ), [line for line in scraped.splitlines() if line.startswith("airflow_ti_finish")]
    # Ctrl-C stopping everything `up` started: checked when the session's platform stops
    # (tests/support/platform_up.shared_up), and for SIGTERM mid-crawl in tests/faults
