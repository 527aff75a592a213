"""Crawl control end to end, in headless Chromium inside a real Airflow (`harvestflow up` on a
fresh data dir, the session's shared platform): a one-off harvest triggered through Airflow's API crawls a slow loopback site
with an endless trap; a crawl engineer (Airflow's admin) signed in on the curator job page
pauses it (the server sees no request while paused), resumes it, adds a filter that stops the
trap (queued trap URLs logged as rejected with the filter named) and stops it; the DAG run
succeeds, the job ends DONE with "stopped by operator" in its summary and reports, and the
indexing chain, woken by the harvest's Asset, indexes its WARC."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.browser import chromium
from tests.support.control_site import PAUSE_S, SlowSite
from tests.support.platform_cli import _wait_run
from tests.support.platform_up import Platform, SharedUp, page_gone, sign_in

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

HOST = "www.control.test"


def wait_until(what: str, cond: Callable[[], Any], timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := cond()):
        assert time.monotonic() < deadline, f"waited {timeout}s for: {what}"
        time.sleep(0.5)
    return found


@pytest.fixture(scope="module")
def up(shared_up: SharedUp) -> Iterator[tuple[Platform, SlowSite]]:
    site = SlowSite()
    try:
        yield shared_up.on(site.port), site
    finally:
        site.stop()


def _press(driver: WebDriver, css: str) -> None:
    """Press a form's button and wait for the page the POST redirects to."""
    button = driver.find_element(By.CSS_SELECTOR, css)
    button.click()
    WebDriverWait(driver, 120).until(lambda d: page_gone(button))


def test_an_engineer_pauses_resumes_filters_and_stops_a_running_harvest(
    up: tuple[Platform, SlowSite],
) -> None:
    from harvest.templates import default_spec

    platform, site = up
    engine = sa.create_engine(
        f"postgresql+psycopg2://postgres@127.0.0.1:{platform.env['HARVESTFLOW_POSTGRES__PORT']}"
        "/harvestflow"
    )
    spec = {**default_spec(), "max_hops": 500, "connections_per_host": 1,
            "concurrent_requests": 1, "min_delay_ms": 0, "delay_factor": 0, "max_delay_ms": 0,
            "retries": 0, "render": "none", "obey_robots": False}  # fmt: skip
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO templates (name, spec) VALUES ('control_slow', CAST(:s AS jsonb))"
            ),
            {"s": json.dumps(spec)},
        )
    token = httpx.post(
        f"{platform.base}/auth/token",
        json={"username": "admin", "password": platform.passwords["admin"]},
        timeout=60,
    ).json()["access_token"]
    api = httpx.Client(
        base_url=platform.base, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    wait_until("the one-off DAG parsed", lambda: api.get("/api/v2/dags/oneoff_harvest").is_success)
    conf = {"seeds": [f"http://{HOST}:{site.port}/"], "template": "control_slow",
            "resolve": {HOST: "127.0.0.1"}}  # fmt: skip
    run = api.post("/api/v2/dags/oneoff_harvest/dagRuns", json={"logical_date": None, "conf": conf})
    assert run.status_code == 200, run.text
    run_id = run.json()["dag_run_id"]

    def job() -> Any:
        with engine.connect() as conn:
            return conn.execute(
                sa.text("SELECT job_id, status, job_dir FROM jobs WHERE seedlist LIKE :s"),
                {"s": f"%{HOST}:{site.port}%"},
            ).first()

    def action_state(action_id: int) -> str:
        with engine.connect() as conn:
            return str(
                conn.execute(
                    sa.text("SELECT state FROM job_actions WHERE action_id = :a"), {"a": action_id}
                ).scalar_one()
            )

    def last_action() -> int:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT max(action_id) FROM job_actions")).scalar_one())

    wait_until("the job crawling", lambda: job() is not None and job().status == 2, 600)
    job_id = job().job_id
    wait_until("the site fetched", lambda: site.count() >= 6)
    crawl_log = Path(job().job_dir) / "logs" / "crawl.log"
    page = f"{platform.base}/curator/jobs/{job_id}"
    with chromium() as driver:
        sign_in(driver, platform, "admin")
        driver.get(page)

        _press(driver, "button[name=go][value=pause]")
        pause = last_action()
        wait_until("pause applied", lambda: action_state(pause) == "applied", 120)
        before = site.count()
        time.sleep(PAUSE_S)
        assert site.count() == before, "the server got requests while the crawl was paused"

        _press(driver, "button[name=go][value=resume]")
        resume = last_action()
        wait_until("resume applied", lambda: action_state(resume) == "applied", 120)
        wait_until("requests after resume", lambda: site.count() > before + 2, 120)

        form = driver.find_element(By.ID, "filter-form")
        form.find_element(By.NAME, "pattern").send_keys("/t/")
        form.find_element(By.NAME, "name").send_keys("trap")
        _press(driver, "#filter-form button")
        filtered = last_action()
        wait_until("filter applied", lambda: action_state(filtered) == "applied", 120)

        def rejected() -> list[list[str]]:
            lines = crawl_log.read_text().splitlines() if crawl_log.exists() else []
            fields = [line.split() for line in lines]
            return [f for f in fields if f[1] == "-5001" and "filter:trap" in f[-1]]

        wait_until("queued trap URLs rejected in crawl.log", lambda: len(rejected()) >= 2, 120)
        traps = site.count(lambda p: p.startswith("/t/"))
        pages = site.count(lambda p: p.startswith("/p/"))
        wait_until("pages after the filter",
                   lambda: site.count(lambda p: p.startswith("/p/")) >= pages + 3, 120)  # fmt: skip
        assert site.count(lambda p: p.startswith("/t/")) == traps

        _press(driver, "button[name=go][value=stop]")
        stop = last_action()
        wait_until("stop applied", lambda: action_state(stop) == "applied", 120)
        history = driver.find_element(By.ID, "actions-history").text
        assert "admin" in history and "filter" in history

    state = _wait_run(api, "oneoff_harvest", run_id, 600)
    assert state == "success"
    done = job()
    assert done.status == 3  # DONE
    summary = json.loads((Path(done.job_dir) / "summary.json").read_text())
    assert summary["status"] == "stopped"
    report = (Path(done.job_dir) / "reports" / "crawl-report.txt").read_text()
    assert "Stopped by operator" in report

    def indexed() -> list[Any]:
        with engine.connect() as conn:
            return list(
                conn.execute(
                    sa.text(
                        "SELECT file_name FROM index_manifest WHERE job_id = :j"
                        " AND indexed_at IS NOT NULL AND NOT quarantined"
                    ),
                    {"j": job_id},
                ).all()
            )

    # the harvest's Asset wakes the indexing chain, which indexes the job's WARCs
    assert wait_until("the job's WARCs indexed", indexed, 600)
    engine.dispose()
