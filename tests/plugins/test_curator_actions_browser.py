"""The crawl-control forms in headless Chromium: the curator app served by uvicorn on loopback
(on a real harvest database), a signed-in user clicks *pause* and adds a filter on a running
job's page; the browser carries the CSRF cookie and token itself (HttpOnly, SameSite=Strict),
the actions are recorded with the user and shown in the page's history. Airflow's own login is
covered by test_curator_browser.py; here a cookie stands for it (the test's auth dependency)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from app.curator.actions import Role
from app.curator.webapp import create_app
from tests.support.browser import chromium
from tests.support.curator_jobs import _insert_job
from tests.support.signed_in import auth_for, serving

pytestmark = pytest.mark.services


@pytest.fixture
def served(db_engine: sa.Engine, tmp_path: Path) -> Iterator[tuple[str, int]]:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    (tmp_path / "job").mkdir()
    job = _insert_job(db_engine, tmp_path / "job", status=2)
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=auth_for({"alice": Role.ENGINEER}))
    with serving(app, timeout=60) as base:
        yield base, job


def test_pause_and_filter_from_the_job_page(db_engine: sa.Engine, served) -> None:
    base, job = served
    with chromium() as driver:
        driver.get(f"{base}/static/curator.css")  # any page of the origin, to set the cookie
        driver.add_cookie({"name": "test_user", "value": "alice", "path": "/"})
        driver.get(f"{base}/jobs/{job}")
        # the page reloads after each form: an element read mid-reload is stale, read it again
        wait = WebDriverWait(driver, 60, ignored_exceptions=(StaleElementReferenceException,))
        driver.find_element(By.CSS_SELECTOR, "button[value=pause]").click()
        wait.until(lambda d: "?action=" in d.current_url)
        form = driver.find_element(By.ID, "filter-form")
        Select(form.find_element(By.NAME, "kind")).select_by_value("regex")
        form.find_element(By.NAME, "pattern").send_keys("/calendar/")
        form.find_element(By.NAME, "name").send_keys("cal")
        form.find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: "/calendar/" in d.find_element(By.ID, "actions-history").text)
        history = driver.find_element(By.ID, "actions-history").text
        csrf = driver.get_cookie("hf_csrf")
    assert csrf is not None and csrf["httpOnly"] and csrf.get("sameSite") == "Strict"
    assert "pause" in history and "alice" in history
    with db_engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT action, requested_by FROM job_actions ORDER BY action_id")
        ).all()
    assert [tuple(r) for r in rows] == [("pause", "alice"), ("filter", "alice")]
