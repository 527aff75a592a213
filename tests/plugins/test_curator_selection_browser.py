"""Selection records edited in headless Chromium inside a real Airflow (`harvestflow up` on a
fresh data dir, the session's shared platform, with a curator and a viewer of Airflow's simple
auth manager): the curator signs in on Airflow's login page, creates records (the URL check of a loopback server's 404
refuses one, its 301 is shown; the form says which frequencies a chosen budget cannot have),
edits one, bulk-edits and deactivates, exports the search as
CSV (which imports back unchanged); the viewer's write and a form posted without the CSRF token
are refused (403); the history, the audit table, and the next transfer (the function the
selective DAGs run) show the edits. A record whose seed never answers does not hold the
api-server's other requests. On the same platform, the curator makes an event crawl with an
hourly schedule in the definitions' form: the hourly DAG that Airflow serves finds it due at the
next hour; deactivated and reactivated from its page, it is left out and comes back. A crawl
engineer (a curator sees no such form) makes a domain an alias on its page: the next snapshot's
jobs leave it out."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.browser import lent
from tests.support.platform_up import Platform, SharedUp, page_gone, sign_in
from tests.support.selection_site import Handler
from tests.support.signed_in import page_token

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

STALE = (StaleElementReferenceException,)
# the page's fetch() with the browser's own cookies (Airflow's _token and hf_csrf)
POST = """
const [url, body, done] = arguments;
fetch(url, {method: "POST", body: new URLSearchParams(body), redirect: "manual"})
  .then(async r => done([r.status, await r.text()]));
"""
GET = """
const [url, done] = arguments;
fetch(url).then(async r => done([r.status, await r.text()]));
"""


@pytest.fixture(scope="module")
def platform(shared_up: SharedUp) -> Iterator[Platform]:
    """The session's platform (its users carol, victor and ian, URL checks of loopback seeds, and
    a seed check this file's test ends itself: tests/support/platform_up.shared_up)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield shared_up.on(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _submit(driver: WebDriver, form_id: str, button: str = "button", **fields: str) -> str:
    """Fill the form's fields, press its button, wait for the answer; the answer's text."""
    form = driver.find_element(By.ID, form_id)
    for name, value in fields.items():
        box = form.find_element(By.NAME, name)
        if box.tag_name == "select":  # budget, frequency, depth: the mapping's values
            Select(box).select_by_value(value)
            continue
        if box.get_attribute("type") == "checkbox":
            if (value == "yes") != box.is_selected():
                box.click()
            continue
        box.clear()
        box.send_keys(value)
    form.find_element(By.CSS_SELECTOR, button).click()
    WebDriverWait(driver, 90).until(lambda d: page_gone(form))
    WebDriverWait(driver, 90, ignored_exceptions=STALE).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )
    return driver.find_element(By.TAG_NAME, "main").text


def _record(site: int, path: str, title: str) -> dict[str, str]:
    return {
        "collection": "News",
        "title": title,
        "seed_url": f"http://127.0.0.1:{site}{path}",
        "budget": "small",
        "frequency": "weekly",
        "depth": "page",
        "theme": "politics",
    }


def _engine(env: dict[str, str]) -> sa.Engine:
    from harvestflow.db import get_engine
    from harvestflow.settings import load

    return get_engine(load(environ=env).harvest_db_url)


def test_curator_edits_records_viewer_and_forgery_are_refused(
    platform: Platform, file_chromium: Chrome, tmp_path: Path
) -> None:
    from harvest.selection.importer import import_file
    from harvest.selection.transfer import transfer_selection_records

    cur, site = platform.base + "/curator", platform.site
    engine = _engine(platform.env)
    with engine.connect() as conn:  # the platform is shared: this test's audit rows come after
        audit_before = conn.execute(sa.text("SELECT coalesce(max(audit_id), 0) FROM audit_log"))
        first_audit = int(audit_before.scalar_one())
    with lent(file_chromium, platform.base) as driver:
        driver.set_script_timeout(90)
        sign_in(driver, platform, "carol")
        driver.get(cur + "/records/new")
        # as a budget is chosen, the frequencies the save would refuse with it say why
        Select(driver.find_element(By.ID, "f-budget")).select_by_value("large")
        daily = driver.find_element(By.CSS_SELECTOR, '#f-frequency option[value="daily"]')
        WebDriverWait(driver, 30).until(lambda d: "not with these" in daily.text)
        assert "cannot be harvested daily" in daily.text
        monthly = driver.find_element(By.CSS_SELECTOR, '#f-frequency option[value="monthly"]')
        assert monthly.text == "monthly"
        text = _submit(driver, "record-form", **_record(site, "/gone", "Gone"))
        assert f"refused: http://127.0.0.1:{site}/gone: the server answered 404" in text
        driver.get(cur + "/records/new")
        text = _submit(driver, "record-form", **_record(site, "/moved", "Moved"))
        assert f"/moved redirects (301) to http://127.0.0.1:{site}/ok" in text
        moved = int(driver.current_url.split("/records/")[1].split("?")[0])
        ids = [moved]
        for path, title in (("/ok", "Front"), ("/a", "Section A")):
            driver.get(cur + "/records/new")
            _submit(driver, "record-form", **_record(site, path, title))
            ids.append(int(driver.current_url.split("/records/")[1].split("?")[0]))
        driver.get(f"{cur}/records/{ids[1]}")
        _submit(driver, "record-form", title="Front page", depth="host")

        # bulk: all three monthly in collection Arts, then the first one deactivated
        driver.get(cur + "/records?collection=News")
        for box in driver.find_elements(By.NAME, "ids"):
            box.click()
        text = _submit(driver, "bulk-form", "#bulk-edit", frequency="monthly", collection="Arts")
        assert "3 changed, 0 unchanged" in text
        driver.get(cur + "/records?collection=Arts&q=moved")
        driver.find_element(By.NAME, "ids").click()
        text = _submit(driver, "bulk-form", "#bulk-edit", deactivate="yes")
        assert "1 changed" in text

        driver.get(f"{cur}/records/{ids[1]}")
        history = driver.find_element(By.ID, "history").text
        for change in ("carol collection News Arts", "carol frequency weekly monthly",
                       "carol depth page host", "carol title Front Front page"):  # fmt: skip
            assert change in history, history

        driver.get(cur + "/records?collection=Arts")
        export = driver.find_element(By.ID, "export").get_attribute("href")
        status, exported = driver.execute_async_script(GET, export)
        assert status == 200 and exported.count("\n") == 4, exported  # header + 3 records
        # a form posted without the token (another site's): refused, nothing written
        status, body = driver.execute_async_script(
            POST, f"{cur}/records/{ids[2]}", _record(site, "/a", "forged")
        )
        assert status == 403 and "CSRF" in body

    with lent(file_chromium, platform.base) as driver:
        driver.set_script_timeout(90)
        sign_in(driver, platform, "victor")
        driver.get(f"{cur}/records/{ids[2]}")
        main = driver.find_element(By.TAG_NAME, "main").text
        assert "Section A" in main and "needs the curator role" in main
        assert not driver.find_elements(By.ID, "record-form")
        driver.get(cur + "/records")
        token = driver.find_element(By.NAME, "csrf_token").get_attribute("value")
        body = {"ids": str(ids[2]), "deactivate": "yes", "op": "edit", "csrf_token": token}
        status, text = driver.execute_async_script(POST, f"{cur}/records/bulk", body)
        assert status == 403 and "this needs the curator role" in text
        assert "victor is a viewer in collection 'Arts'" in text

    with engine.connect() as conn:
        audit = conn.execute(
            sa.text(
                "SELECT username, action, target FROM audit_log WHERE audit_id > :first"
                " ORDER BY audit_id"
            ),
            {"first": first_audit},
        ).all()
        active = conn.execute(
            sa.text("SELECT title FROM selection_records WHERE active ORDER BY record_id")
        ).all()
    assert [a.action for a in audit] == [
        *["record.create"] * 3,
        "record.edit",
        *["record.bulk_edit"] * 4,
    ]
    assert {a.username for a in audit} == {"carol"}
    assert [a.title for a in active] == ["Front page", "Section A"]

    # the export is the import's format: it imports back to the same records
    path = tmp_path / "export.csv"
    path.write_text(exported, encoding="utf-8")
    report = import_file(path, engine=engine, user="check", rejects_path=tmp_path / "rejects")
    assert (report.errors, report.inserted, report.updated, report.unchanged) == ([], 0, 0, 3)

    # the transfer the selective DAGs run: the monthly Arts definition, without the inactive one
    result = transfer_selection_records(engine=engine)
    assert result["records"] == 2 and "arts-monthly" in result["definitions"]
    with engine.connect() as conn:
        seeds = conn.execute(
            sa.text("SELECT name, seeds FROM seedlists WHERE name LIKE 'sel-small-monthly-%'")
        ).all()
    urls = "\n".join(str(s.seeds) for s in seeds)
    assert f"http://127.0.0.1:{site}/ok" in urls and f"http://127.0.0.1:{site}/a" in urls
    assert "/moved" not in urls


def test_a_seed_that_never_answers_does_not_hold_the_api_server(platform: Platform) -> None:
    """Airflow's api-server (one worker, one event loop) serves the curator pages: while a
    record is saved whose seed's server accepts and never answers, ``/api/v2/monitor/health``
    is answered; the save ends when that server hangs up, refused as "not reachable"."""
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    held: list[socket.socket] = []
    checking = threading.Event()

    def accept() -> None:
        conn, _ = silent.accept()
        held.append(conn)  # never answered
        checking.set()

    threading.Thread(target=accept, daemon=True).start()
    answer = httpx.post(
        f"{platform.base}/auth/token",
        json={"username": "carol", "password": platform.passwords["carol"]},
        timeout=60,
    )
    assert answer.status_code == 201, answer.text
    jwt = answer.json()["access_token"]
    saved: list[httpx.Response] = []
    with (
        httpx.Client(base_url=platform.base, cookies={"_token": jwt}, timeout=300) as carol,
        httpx.Client(base_url=platform.base, timeout=300) as anyone,
    ):
        token = page_token(carol.get("/curator/records/new").text)
        form = {**_record(port, "/", "Silent"), "csrf_token": token}
        saver = threading.Thread(
            target=lambda: saved.append(carol.post("/curator/records/new", data=form))
        )
        saver.start()
        try:
            assert checking.wait(120), "the URL check never connected"
            health = anyone.get("/api/v2/monitor/health")
            assert health.status_code == 200, health.text
            # answered while the check still waits: the save has not been answered yet
            assert saver.is_alive() and not saved
        finally:
            for conn in held:
                conn.close()  # the seed's server hangs up: the check ends
            saver.join(120)
            silent.close()
    assert saved and saved[0].status_code == 400, saved
    assert f"http://127.0.0.1:{port}/: not reachable" in saved[0].text


def test_a_curator_makes_an_hourly_event_crawl_and_switches_it_off_and_on(
    platform: Platform,
    file_chromium: Chrome,
) -> None:
    from datetime import UTC, datetime, timedelta

    from harvest.definitions import due_definitions

    cur, engine = platform.base + "/curator", _engine(platform.env)
    made = datetime.now(UTC)
    next_hour = made.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    with lent(file_chromium, platform.base) as driver:
        driver.set_script_timeout(90)
        sign_in(driver, platform, "carol")
        driver.get(cur + "/definitions")
        driver.find_element(By.ID, "new-definition").click()
        Select(driver.find_element(By.NAME, "unit")).select_by_value("hour")
        seeds = f"http://127.0.0.1:{platform.site}/ok\nhttp://127.0.0.1:{platform.site}/a"
        text = _submit(driver, "definition-form", name="Election night", seeds=seeds)
        assert "saved" in text and "every 1 hour(s)" in text and "next harvest" in text, text
        hid = int(driver.current_url.split("/definitions/")[1].split("?")[0])
        # the hourly DAG's first task: due in the run of the next hour, not in the one before
        assert hid in due_definitions("hourly", next_hour, engine)
        assert hid not in due_definitions("hourly", next_hour - timedelta(hours=1), engine)

        text = _submit(driver, "active-form", "#deactivate", reason="results delayed")
        assert "inactive: deactivated by carol: results delayed" in text
        assert hid not in due_definitions("hourly", next_hour, engine)
        text = _submit(driver, "active-form", "#reactivate")
        assert "inactive" not in driver.find_element(By.ID, "definition-state").text, text
        assert hid in due_definitions("hourly", next_hour, engine)
        history = driver.find_element(By.ID, "history").text
        for action in ("create", "deactivate", "reactivate"):
            assert f"carol {action}" in history, history

    # Airflow serves the hourly DAG that harvests these definitions
    token = httpx.post(
        f"{platform.base}/auth/token",
        json={"username": "carol", "password": platform.passwords["carol"]},
        timeout=60,
    ).json()["access_token"]
    dag = httpx.get(
        f"{platform.base}/api/v2/dags/selective_harvest_hourly",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert dag.status_code == 200 and dag.json()["dag_id"] == "selective_harvest_hourly", dag.text


def test_an_engineer_makes_a_domain_an_alias_and_the_next_snapshot_leaves_it_out(
    platform: Platform,
    file_chromium: Chrome,
) -> None:
    from datetime import UTC, datetime

    from harvest.domains import ensure_config
    from harvest.planning import generate_jobs
    from harvest.snapshot import create_snapshot_definition

    cur, engine = platform.base + "/curator", _engine(platform.env)
    with engine.begin() as conn:
        for name in ("mirror-a.test", "mirror-b.test"):
            ensure_config(conn, name)
    with lent(file_chromium, platform.base) as driver:
        sign_in(driver, platform, "carol")  # a curator: the domain page has no alias form
        driver.get(cur + "/domains/mirror-b.test")
        assert not driver.find_elements(By.ID, "alias-form")
        sign_in(driver, platform, "ian")
        driver.get(cur + "/domains/mirror-b.test")
        _submit(driver, "alias-form", "#set-alias", alias_of="mirror-a.test")
        state = driver.find_element(By.ID, "alias-state").text
        assert "mirror-a.test" in state and "by ian" in state and "expires" in state, state
    snapshot = create_snapshot_definition("broad-after-alias", engine=engine)
    jobs = generate_jobs(snapshot, datetime.now(UTC), engine)
    with engine.connect() as conn:
        domains = set(
            conn.execute(
                sa.text(
                    "SELECT d.name FROM job_configs jc JOIN configurations c USING (config_id)"
                    " JOIN domains d USING (domain_id) WHERE jc.job_id = ANY(:j)"
                ),
                {"j": jobs},
            ).scalars()
        )
    assert "mirror-a.test" in domains and "mirror-b.test" not in domains
