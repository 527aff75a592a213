"""A curator corrects a document's metadata and catalogues it on the documents page, in headless
Chromium on a real harvest database (#35 item 4); the correction is kept with its history. A
cookie stands for Airflow's login (covered by test_curator_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from app.curator.actions import Role
from app.curator.webapp import create_app
from indexing.documents import store
from tests.support.browser import chromium
from tests.support.docfixtures import add
from tests.support.signed_in import auth_for, serving

pytestmark = pytest.mark.services


def test_a_curator_corrects_and_catalogues_in_the_browser(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    doc = add(db_engine, 1, record_id=5)
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=auth_for({"carol": Role.CURATOR}))
    with serving(app) as base, chromium() as driver:
        driver.get(f"{base}/static/curator.css")  # any page of the origin, to set the cookie
        driver.add_cookie({"name": "test_user", "value": "carol", "path": "/"})
        driver.get(f"{base}/documents?target=5")
        wait = WebDriverWait(driver, 120, ignored_exceptions=(StaleElementReferenceException,))
        row = driver.find_element(By.CSS_SELECTOR, "#documents tbody tr")
        assert "Report 1" in row.text and "available" in row.text
        row.find_element(By.LINK_TEXT, str(doc)).click()
        wait.until(lambda d: d.find_elements(By.ID, "document-form"))
        title = driver.find_element(By.ID, "f-title")
        title.clear()
        title.send_keys("Annual Report and Accounts 2025")
        authors = driver.find_element(By.ID, "f-authors")
        authors.send_keys("\nRavi Patel")
        driver.find_element(By.ID, "save").click()
        wait.until(lambda d: "corrected" in d.find_element(By.ID, "saved").text)
        assert "title" in driver.find_element(By.ID, "saved").text
        driver.find_element(By.ID, "catalogue").click()
        wait.until(lambda d: d.find_element(By.ID, "state").text.startswith("catalogued"))
        history = driver.find_element(By.ID, "history").text
    assert "correct" in history and "catalogue" in history and "carol" in history
    assert "Annual Report and Accounts 2025" in history
    with db_engine.connect() as conn:
        (shown,) = store.list_documents(conn, document_id=doc)
        versions = store.history(conn, doc)
    assert shown["title"] == "Annual Report and Accounts 2025"
    assert shown["authors"] == ["Jane Smith", "Ravi Patel"]
    assert [v["action"] for v in versions] == ["catalogue", "correct", "available"]
    assert versions[1]["before"] == {"title": "Report 1", "authors": ["Jane Smith"]}
