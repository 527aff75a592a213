"""QA feedback and annotations from the curator pages, on a real harvest database: in headless
Chromium a curator sets a job's QA status and writes a comment asking to add URLs to the next
harvest; the comment shows on the domain page, where the curator also records the target's scope
evidence and licence; the next selection transfer (what the selective DAGs run) puts the URLs
into the record's seeds. Through FastAPI's TestClient: a forged post without the page's CSRF
token and a user without edit permission are refused, and bad input is a 400 naming it.
Airflow's own login is covered by test_curator_browser.py; here a cookie stands for it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from app.curator.actions import Role
from app.curator.webapp import create_app
from harvest import pipeline
from harvest.selection.importer import import_file
from harvest.selection.transfer import transfer_selection_records
from tests.support.browser import chromium
from tests.support.signed_in import auth_for, serving, signed_in_client

pytestmark = pytest.mark.services

USERS = {"alice": Role.CURATOR, "victor": Role.VIEWER}  # name -> role
TARGET = {
    "id": 7,
    "title": "Town hall",
    "seeds": ["http://townhall.test/"],
    "schedules": [{"frequency": "DAILY", "startDate": None, "endDate": None}],
    "scope": "plus1",
    "depth": "CAPPED",
    "collection": "news",
    "theme": "local",
}
MISSING = ["http://townhall.test/minutes/2026", "http://townhall.test/agenda.pdf"]


@pytest.fixture
def crawled(db_engine: sa.Engine, tmp_path: Path) -> int:
    """A job of a curator's selection record (imported, transferred, generated)."""
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    feed = tmp_path / "feed.json"
    feed.write_text(json.dumps([TARGET]))
    assert not import_file(feed, check_urls=False, engine=db_engine).errors
    result = transfer_selection_records("daily", engine=db_engine)
    hid = result["definitions"]["news-daily"]
    return pipeline.generate_jobs(hid, datetime(2026, 12, 6, tzinfo=UTC), engine=db_engine)[0]


@pytest.fixture
def served(db_engine: sa.Engine, tmp_path: Path, crawled: int) -> Iterator[str]:
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=auth_for(USERS))
    with serving(app) as base:
        yield base


def _seeds(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        seeds = conn.execute(
            sa.text(
                "SELECT s.seeds FROM seedlists s JOIN domains d USING (domain_id)"
                " WHERE d.name = 'townhall.test'"
            )
        ).scalar_one()
    return str(seeds).splitlines()


def test_qa_comment_from_the_job_page_reaches_the_domain_and_the_next_transfer(
    db_engine: sa.Engine, served: str, crawled: int
) -> None:
    base, job = served, crawled
    with chromium() as driver:
        driver.get(f"{base}/static/curator.css")  # any page of the origin, to set the cookie
        driver.add_cookie({"name": "test_user", "value": "alice", "path": "/"})
        driver.get(f"{base}/jobs/{job}")
        # the page reloads after each form: an element read mid-reload is stale, read it again
        wait = WebDriverWait(driver, 120, ignored_exceptions=(StaleElementReferenceException,))
        assert driver.find_element(By.ID, "qa-status").text == "not checked"
        form = driver.find_element(By.ID, "qa-form")
        Select(form.find_element(By.NAME, "status")).select_by_value("issues")
        form.find_element(By.NAME, "text").send_keys("minutes and agenda missing")
        form.find_element(By.NAME, "add_urls").send_keys("\n".join(MISSING))
        form.find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: "?qa=" in d.current_url)
        wait.until(lambda d: d.find_element(By.ID, "qa-status").text == "issues")
        comments = driver.find_element(By.ID, "qa-comments").text
        assert "minutes and agenda missing" in comments and "alice" in comments
        assert MISSING[0] in comments and "pending" in comments

        driver.get(f"{base}/domains/townhall.test")
        shown = wait.until(lambda d: d.find_element(By.ID, "domain-qa").text)
        assert "minutes and agenda missing" in shown and "issues" in shown
        form = driver.find_element(By.CSS_SELECTOR, "form.annotation-form")
        form.find_element(By.NAME, "evidence_manual").click()
        form.find_element(By.NAME, "evidence_manual_text").send_keys("publisher's letter")
        Select(form.find_element(By.NAME, "licence_status")).select_by_value("granted")
        form.find_element(By.NAME, "licence_date").send_keys("2026-03-01")
        form.find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: "by alice" in d.find_element(By.CSS_SELECTOR, "table.annotation").text)
        annotation = driver.find_element(By.CSS_SELECTOR, "table.annotation").text
    assert "manual: publisher's letter" in annotation
    assert "granted (2026-03-01)" in annotation

    assert _seeds(db_engine) == ["http://townhall.test/"]
    result = transfer_selection_records("daily", engine=db_engine)
    assert len(result["directives"]) == 1 and not result["errors"]
    assert _seeds(db_engine) == ["http://townhall.test/", *MISSING]


def _comments(engine: sa.Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT author, body FROM job_qa_comments")).all()
    return [(r.author, r.body) for r in rows]


def test_forged_or_unauthorised_writes_are_refused(
    db_engine: sa.Engine, tmp_path: Path, crawled: int
) -> None:
    alice = signed_in_client(db_engine, tmp_path, "alice", USERS)
    page = alice.get(f"/jobs/{crawled}")
    token = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', page.text)
    assert token is not None
    url = f"/jobs/{crawled}/qa"
    forged = alice.post(url, data={"text": "forged", "status": "failed"})
    assert forged.status_code == 403 and "CSRF" in forged.text
    bad = alice.post(url, data={"csrf_token": token.group(1), "status": "so-so"})
    assert bad.status_code == 400 and "QA status 'so-so'" in bad.text
    too_big = alice.post(url, data={"csrf_token": token.group(1), "max_objects": "many"})
    assert too_big.status_code == 400 and "max_objects: 'many'" in too_big.text
    domain = alice.get("/domains/townhall.test")
    record = re.search(r'action="/records/(\d+)/annotations"', domain.text)
    assert record is not None
    forged = alice.post(f"/records/{record.group(1)}/annotations", data={"notes": "x"})
    assert forged.status_code == 403
    ok = alice.post(url, data={"csrf_token": token.group(1), "text": "fine", "status": "passed"})
    assert ok.status_code == 303

    victor = signed_in_client(db_engine, tmp_path, "victor", USERS)
    page = victor.get(f"/jobs/{crawled}")
    assert 'id="qa-form"' not in page.text and "fine" in page.text  # sees, cannot write
    assert 'class="filters annotation-form"' not in victor.get("/domains/townhall.test").text
    assert _comments(db_engine) == [("alice", "fine")]
    # the comment and the annotation are on the selection record the job came from
    noted = alice.post(
        f"/records/{record.group(1)}/annotations",
        data={
            "csrf_token": token.group(1),
            "notes": "council minutes",
            "licence_status": "granted",
        },
    )
    assert noted.status_code == 303, noted.text
    shown = victor.get(f"/records/{record.group(1)}").text
    qa_part = shown[shown.index('id="qa-comments"') :]
    assert "fine" in qa_part and "alice" in qa_part and "passed" in qa_part
    assert "council minutes" in shown and "granted" in shown
