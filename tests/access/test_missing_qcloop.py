"""The curators' visual QC loop end to end, on real services: a loopback site whose page embeds
an image the crawl left out (robots.txt excluded it then); the job goes through the indexing
chain and is served by the replay service (pywb started by our code, behind our gateway). In
headless Chromium, the job's curator page links to the job's own replay view; browsing it
records the image as missing (pywb's not-found answer, seen by the gateway); the job page lists
it; its button queues the ``oneoff_harvest`` DAG (``airflow dags trigger``) for a patch
harvest; that very run is executed (``airflow dags test`` at its logical date, in place of the
scheduler), the patch job is indexed, and the image replays in the job's view, in the job's
definition collection and in ``all``. A QC comment written on the job page is shown on the
domain's page."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from struct import pack
from typing import Any, ClassVar, TypeVar

import pytest
import sqlalchemy as sa
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from access import missing
from access.config import AccessConfig
from access.service import ReplayService
from app.curator.actions import Role
from app.curator.webapp import create_app
from app.runtime import airflow_commands, airflow_logins, dagrun
from app.runtime.dagrun import DAGS_DIR
from harvest.bootstrap import ensure_reference_data
from harvest.domains import ensure_config
from harvest.results import record_job_results
from harvestflow import settings as settings_mod
from harvestflow.audit import audit_entries
from indexing import chain
from tests.support.browser import chromium
from tests.support.chainkit import make_harvest
from tests.support.crawl import FAST_TEMPLATE, run_crawl
from tests.support.environment import free_port
from tests.support.platform_cli import HARVESTFLOW
from tests.support.replay import get
from tests.support.runstates import last_run
from tests.support.signed_in import auth_for, serving

pytestmark = [pytest.mark.services, pytest.mark.airflow, pytest.mark.slow]
T = TypeVar("T")
HOST = "www.qc.test"


def png(rgb: tuple[int, int, int]) -> bytes:
    """A valid one-pixel PNG of that colour (the browser decodes it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return pack(">I", len(data)) + kind + data + pack(">I", zlib.crc32(kind + data))

    raw = b"\x00" + bytes(rgb)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


class Site:
    """www.qc.test on loopback: a page with two images; robots.txt excludes one until told."""

    PAGE = (
        b"<!doctype html><html><head><title>QC page</title></head><body><h1>QC page</h1>"
        b'<img id="ok" src="/img/ok.png"><img id="late" src="/img/late.png"></body></html>'
    )
    FILES: ClassVar[dict[str, bytes]] = {
        "/img/ok.png": png((0, 128, 0)),
        "/img/late.png": png((200, 0, 0)),
    }

    def __init__(self) -> None:
        self.excluding = True
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                if self.path == "/robots.txt":
                    body = b"User-agent: *\nDisallow: /img/late\n" if site.excluding else b""
                    ctype = "text/plain"
                elif self.path == "/":
                    body, ctype = site.PAGE, "text/html; charset=utf-8"
                elif self.path in site.FILES:
                    body, ctype = site.FILES[self.path], "image/png"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_for(check: Callable[[], T], what: str, timeout: float = 180.0) -> T:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"not in time: {what}"
        time.sleep(0.5)
    return result


def db_job(engine: sa.Engine, data_dir: Path, seed: str) -> tuple[int, int, Path]:
    """The curators' job: a DONE job of a selective definition, template demo_loopback."""
    ensure_reference_data(engine)
    hid = make_harvest(engine, "QC site")
    with engine.begin() as conn:
        job_id = int(
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist, resolve, startdate) VALUES (:h, 1, 0,"
                    " 3, 'CIBLEE', 'demo_loopback', CAST('{}' AS jsonb), :s,"
                    " CAST(:r AS jsonb), now()) RETURNING job_id"
                ),
                {"h": hid, "s": seed, "r": json.dumps({HOST: "127.0.0.1"})},
            ).scalar_one()
        )
        job_dir = data_dir / "jobs" / str(hid) / str(job_id) / "20261125120000"
        conn.execute(
            sa.text("UPDATE jobs SET job_dir = :d WHERE job_id = :j"),
            {"d": str(job_dir), "j": job_id},
        )
        # the job harvests the domain's configuration: its results make the domain's history
        ref = ensure_config(conn, "qc.test", template="demo_loopback", seeds=[seed])
        conn.execute(
            sa.text("INSERT INTO job_configs (job_id, config_id) VALUES (:j, :c)"),
            {"j": job_id, "c": ref.config_id},
        )
    return hid, job_id, job_dir


@pytest.fixture
def site() -> Iterator[Site]:
    running = Site()
    yield running
    running.stop()


@pytest.fixture
def airflow_ready(
    airflow_ready: settings_mod.Settings, access_settings: settings_mod.Settings
) -> settings_mod.Settings:
    """Airflow's metadata DB migrated, its pools made (the session's ``airflow_ready``: the
    same database, prepared once per session) and the DAGs in it (what its dag-processor
    does), for this test's settings (its own Airflow home and logins)."""
    access_settings.airflow_home.mkdir(parents=True, exist_ok=True)
    airflow_logins.ensure_login(access_settings)
    airflow_commands.run_airflow(access_settings, "dags", "reserialize")
    return access_settings


@pytest.fixture
def curator_pages(
    db_engine: sa.Engine, airflow_ready: settings_mod.Settings, tmp_path: Path
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The curator app on loopback (a cookie stands for Airflow's login), its patch button
    queuing DAG runs through the real ``airflow dags trigger``; yields (base, triggered)."""
    triggered: list[dict[str, Any]] = []

    def trigger(dag_id: str, conf: dict[str, Any], run_id: str, when: datetime) -> str:
        queued = dagrun.trigger(airflow_ready, dag_id, conf, run_id, when)
        triggered.append({"dag_id": dag_id, "conf": conf, "run_id": queued, "when": when})
        return queued

    app = create_app(
        lambda: db_engine,
        data_dir=tmp_path / "curator",
        auth=auth_for({"alice": Role.ENGINEER}),
        access_url=AccessConfig.from_settings(airflow_ready).url,
        trigger=trigger,
    )
    with serving(app, timeout=60) as base:
        yield base, triggered


def dag_run(settings: settings_mod.Settings, run_id: str) -> sa.Row[Any] | None:
    engine = sa.create_engine(settings.airflow_db_url)
    try:
        with engine.connect() as conn:
            return conn.execute(
                sa.text(
                    "SELECT run_id, state, conf, logical_date FROM dag_run"
                    " WHERE dag_id = 'oneoff_harvest' AND run_id = :r"
                ),
                {"r": run_id},
            ).first()
    finally:
        engine.dispose()


def test_a_curator_browses_a_job_finds_a_missing_image_and_a_patch_harvest_fills_it(
    db_engine: sa.Engine,
    access_settings: settings_mod.Settings,
    site: Site,
    curator_pages: tuple[str, list[dict[str, Any]]],
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    base, triggered = curator_pages
    seed, late, ok = site.url("/"), site.url("/img/late.png"), site.url("/img/ok.png")
    hid, job_id, job_dir = db_job(db_engine, settings.data_dir, seed)
    template = {**FAST_TEMPLATE, "allow_private_addresses": True, "obey_robots": True}
    job = {"job_id": job_id, "harvest_id": hid, "seeds": [seed], "template": template}
    crawled = run_crawl({**job, "resolve": {HOST: "127.0.0.1"}}, job_dir)
    fetched = {f[3]: f[1] for f in crawled.log_fields()}
    assert fetched[ok] == "200" and fetched[late] != "200", fetched  # robots.txt kept it out
    record_job_results(job_id, engine=db_engine)  # the domain's history (the harvest DAG's step)
    run = chain.run_chain(settings)
    assert run["done"] == run["processed"] >= 1 and not run["quarantined"]
    view = missing.job_collection(job_id)

    service = ReplayService(settings)
    service.start()
    try:
        # the job's view serves the job's captures at once (no merge): the page, one image
        status, body = get(cfg.replay_url(view, "2030", seed, "id_"))
        assert status == 200 and b"QC page" in body
        assert get(cfg.replay_url(view, "2030", ok, "id_"))[0] == 200
        with chromium() as driver:
            driver.get(base + "/static/curator.css")
            driver.add_cookie({"name": "test_user", "value": "alice"})
            driver.get(f"{base}/jobs/{job_id}")
            link = driver.find_element(By.CSS_SELECTOR, "#qc + p a.replay")
            assert link.text == seed
            assert link.get_attribute("href").startswith(f"{cfg.url}{view}/")  # type: ignore[union-attr]
            job_page = driver.current_window_handle
            link.click()  # "view this capture": a new tab with the job's replay view
            WebDriverWait(driver, 60).until(lambda d: len(d.window_handles) == 2)
            driver.switch_to.window(next(h for h in driver.window_handles if h != job_page))
            # pywb's frame, the capture inside it: its images asked for in the job's view
            WebDriverWait(driver, 120).until(
                lambda d: d.find_elements(By.CSS_SELECTOR, "iframe#replay_iframe")
            )
            driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, "iframe#replay_iframe"))
            WebDriverWait(driver, 120).until(lambda d: d.find_elements(By.ID, "late"))
            loaded = WebDriverWait(driver, 120).until(
                lambda d: d.execute_script(
                    "const i = [...document.images]; return i.length == 2"
                    " && i.every(x => x.complete) && i.map(x => [x.id, x.naturalWidth])"
                )
            )
            assert sorted(loaded) == [["late", 0], ["ok", 1]]  # the late image is not there

            def recorded() -> list[missing.MissingUrl]:
                with db_engine.connect() as conn:
                    return missing.for_job(conn, job_id)

            # pywb's not-found answer to the image (im_) is recorded against the job; what the
            # view served (the page, the other image) is not
            miss = wait_for(
                lambda: {m.url: m for m in recorded()}.get(late), "the missing image recorded"
            )
            assert (miss.embed, miss.patch_id) == (True, None) and miss.hits >= 1
            assert not {seed, ok} & {m.url for m in recorded()}

            # the job page lists it; its button sends it to a patch harvest
            driver.switch_to.window(job_page)
            driver.get(f"{base}/jobs/{job_id}")
            rows = driver.find_elements(By.CSS_SELECTOR, "#missing-urls tbody tr")
            listed = {r.find_element(By.CSS_SELECTOR, "td.url").text: r.text for r in rows}
            assert "embed" in listed[late] and not {seed, ok} & listed.keys()
            form = driver.find_element(By.ID, "patch-form")
            # the POST is answered once `airflow dags trigger` has queued the run (a process
            # starting Airflow: seconds on a quiet machine, over a minute under load, when the
            # click's page load outlived the browser's 60-s page-load timeout): the click's
            # page load may take the 300 s the patch list is waited for
            driver.set_page_load_timeout(300)
            form.find_element(By.CSS_SELECTOR, "button[name=all]").click()
            WebDriverWait(driver, 300).until(lambda d: d.find_elements(By.ID, "patches"))
            driver.set_page_load_timeout(60)
            assert "patch 1" in driver.find_element(By.ID, "missing-urls").text

            # a QC comment on the job, saved in the harvest database, shown on the domain
            form = driver.find_element(By.ID, "qa-form")
            form.find_element(By.NAME, "text").send_keys("the late image is missing")
            form.find_element(By.CSS_SELECTOR, "button").click()
            # the page reloads after the post: an element read mid-reload is stale, read again
            WebDriverWait(driver, 120, ignored_exceptions=(StaleElementReferenceException,)).until(
                lambda d: "the late image is missing" in d.find_element(By.ID, "qa-comments").text
            )
            driver.get(f"{base}/domains/qc.test")
            shown = driver.find_element(By.ID, "domain-qa").text
            assert "the late image is missing" in shown and "alice" in shown
        [queued] = triggered
        assert queued["dag_id"] == "oneoff_harvest"
        row = dag_run(settings, queued["run_id"])
        assert row is not None and row.state == "queued" and row.conf == queued["conf"]
        with db_engine.connect() as conn:
            [patch] = missing.patches_of(conn, job_id)
        assert patch["urls"] == [late] and patch["requested_by"] == "alice"
        with db_engine.connect() as conn:  # and audited, as every write of the pages
            audit = audit_entries(conn, target=f"job {job_id}")
        assert ("alice", "job.patch") in [(a["username"], a["action"]) for a in audit]
        assert queued["conf"] == {"harvest_id": patch["harvest_id"]}
        assert patch["dag_run_id"] == queued["run_id"]

        # the scheduler's part: run that queued run (same logical date: Airflow replaces it),
        # through `harvestflow airflow` (the suite's one run of that command); `-f`: only the
        # DAG's own file parsed and written, as the run needs (the fixture wrote them all)
        site.excluding = False
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        proc = subprocess.run(
            [HARVESTFLOW, "airflow", "dags", "test", "oneoff_harvest",
             queued["when"].isoformat(), "-c", json.dumps(queued["conf"]),
             "-f", str(DAGS_DIR / "oneoff_harvest.py")],
            env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        ran = last_run(settings, "oneoff_harvest")
        assert ran.state == "success", ran
        assert dag_run(settings, queued["run_id"]) in (None, ran)  # the queued one, replaced
        with db_engine.connect() as conn:
            patch_jobs = conn.execute(
                sa.text("SELECT job_id, status FROM jobs WHERE harvest_id = :h"),
                {"h": patch["harvest_id"]},
            ).all()
        assert len(patch_jobs) == 1 and patch_jobs[0].status == 3, patch_jobs  # DONE
        run = chain.run_chain(settings)
        assert run["done"] == run["processed"] >= 1 and not run["quarantined"]

        # the image replays, without a restart, in the job's view, its definition's collection
        # and the whole archive
        image = Site.FILES["/img/late.png"]
        for coll in (view, f"harvest-{hid}", "all"):
            wait_for(
                lambda c=coll: get(cfg.replay_url(c, "2030", late, "id_")) == (200, image),
                f"the patched image in {coll}",
            )
    finally:
        service.stop()
