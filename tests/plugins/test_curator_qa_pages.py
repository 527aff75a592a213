"""The QA pass's results where curators look: the job page of a really crawled and checked job,
in headless Chromium, lists its pages worst first with both screenshots (loaded as images) and
the URLs still missing; a QA screenshot's route serves only the job's own QA files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from app.curator.actions import Role
from app.curator.webapp import create_app
from tests.support import qasite
from tests.support.browser import chromium
from tests.support.crawl import FAST_TEMPLATE, run_crawl
from tests.support.curator_jobs import _insert_job
from tests.support.rawsite import serve
from tests.support.scriptsite import compressed
from tests.support.signed_in import auth_for, serving, signed_in_client

pytestmark = pytest.mark.services

USERS = {"alice": Role.CURATOR}
WIDTH_JS = "return arguments[0].complete ? arguments[0].naturalWidth : 0"


@pytest.fixture(scope="module")
def checked_job_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A job directory of a real crawl whose two seeds were rendered and checked: one
    replays perfectly, one misses its one-time image."""
    site = qasite.QaSite()
    with serve(site.route, negotiate=compressed) as server:
        job = {
            "job_id": 31,
            "seeds": [server.url(qasite.HOST, p) for p in ("/perfect.html", "/once.html")],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 0,
                "render": "seeds",
                "render_min_wait_s": 0.3,
                "render_consent": "none",
                "qa": True,
                "qa_patch": True,
            },
            "resolve": {qasite.HOST: "127.0.0.1"},
        }
        out = tmp_path_factory.mktemp("qajob") / "job"
        run_crawl(job, out, timeout=120)
        return out, server.port


@pytest.fixture
def served(db_engine: sa.Engine, tmp_path: Path, checked_job_dir: Any) -> Iterator[tuple[str, int]]:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    job = _insert_job(db_engine, checked_job_dir[0], status=3)
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=auth_for(USERS))
    with serving(app) as base:
        yield base, job


def test_the_job_page_shows_scores_worst_first_with_both_screenshots_and_the_missing(
    served: tuple[str, int], checked_job_dir: Any
) -> None:
    (base, job), (_, port) = served, checked_job_dir
    with chromium() as driver:
        driver.get(f"{base}/static/curator.css")  # any page of the origin, to set the cookie
        driver.add_cookie({"name": "test_user", "value": "alice", "path": "/"})
        driver.get(f"{base}/jobs/{job}#page-qa")
        rows = driver.find_elements(By.CSS_SELECTOR, "tr.qa-page")
        pages = [r.find_element(By.CSS_SELECTOR, "td.qa-url").text for r in rows]
        scores = [float(r.find_element(By.CSS_SELECTOR, "td.score").text) for r in rows]
        assert pages == [
            f"http://{qasite.HOST}:{port}/once.html",
            f"http://{qasite.HOST}:{port}/perfect.html",
        ]
        assert scores[0] < 80 <= scores[1]
        assert "below" in rows[0].find_element(By.CSS_SELECTOR, "td.score").get_attribute("class")
        missing = rows[0].find_element(By.CSS_SELECTOR, "ul.qa-missing").text
        assert f"http://{qasite.HOST}:{port}/img/once.png?token=" in missing
        assert not rows[1].find_elements(By.CSS_SELECTOR, "ul.qa-missing")
        wait = WebDriverWait(driver, 30)
        for row in rows:
            for kind in ("qa-capture", "qa-replay"):
                img = row.find_element(By.CSS_SELECTOR, f"img.{kind}")
                driver.execute_script("arguments[0].scrollIntoView()", img)  # lazy images
                wait.until(lambda d, img=img: d.execute_script(WIDTH_JS, img) > 0)
                # decoded as a PNG of the page's width, as screenshotted
                assert driver.execute_script(WIDTH_JS, img) == 1280, kind


def test_a_qa_screenshot_route_serves_only_the_jobs_qa_files(
    db_engine: sa.Engine, tmp_path: Path, checked_job_dir: Any
) -> None:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    job = _insert_job(db_engine, checked_job_dir[0], status=3)
    client = signed_in_client(db_engine, tmp_path, "alice", USERS)
    names = sorted(p.name for p in (checked_job_dir[0] / "reports" / "qa-shots").iterdir())
    got = client.get(f"/jobs/{job}/qa-shots/{names[0]}")
    assert got.status_code == 200 and got.headers["content-type"] == "image/png"
    assert got.content == (checked_job_dir[0] / "reports" / "qa-shots" / names[0]).read_bytes()
    assert client.get(f"/jobs/{job}/qa-shots/0123456789abcdef-capture.png").status_code == 404
    for bad in ("..%2Fjob.json", "x.png", "0123456789abcdef-replay-3.png"):
        assert client.get(f"/jobs/{job}/qa-shots/{bad}").status_code in (404, 422), bad
