"""A page behind a OneTrust-style consent wall (tests/crawler/behavioursite.py), crawled with
``--render html`` (autoconsent's rule accepted it, so its story and image were captured),
indexed by the chain and replayed through our access service (pywb started by our code) in
headless Chromium, the live site stopped: the reader meets the same dialog, makes the same click
("accept"), and the story with its image appears from the archive."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from access import missing
from access.config import AccessConfig
from access.service import ReplayService
from crawler.rendering.cdp import find_chromium
from harvestflow import settings as settings_mod
from indexing import chain
from tests.support import behavioursite as bs
from tests.support.browser import chromium
from tests.support.replay import make_db_job

pytestmark = [pytest.mark.services, pytest.mark.slow]

# the story's image once loaded (its natural width), or 0
STORY_IMAGE_JS = """
const img = document.querySelector('#story img');
return img && img.complete ? img.naturalWidth : 0;
"""


def test_a_consent_walled_page_replays_its_story_after_the_readers_accept(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    find_chromium()
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    hid, job_id, job_dir = make_db_job(db_engine, settings.data_dir)
    result, prefix, captured = bs.crawl(
        job_dir, ("/onetrust.html",), job_id=job_id, harvest_id=hid, max_hops=0
    )
    seed = prefix + "/onetrust.html"
    assert prefix + bs.story_image("onetrust") in captured
    assert "consent:accept:Onetrust" in result.line_for(seed)[11].split(",")
    run = chain.run_chain(settings)
    assert run["done"] == run["processed"] >= 1 and not run["quarantined"], run
    view = missing.job_collection(job_id)

    service = ReplayService(settings)
    service.start()
    try:
        with chromium() as driver:
            driver.get(cfg.replay_url(view, "2030", seed))
            WebDriverWait(driver, 120).until(
                lambda d: d.find_elements(By.CSS_SELECTOR, "iframe#replay_iframe")
            )
            driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, "iframe#replay_iframe"))
            accept = WebDriverWait(driver, 120).until(
                lambda d: d.find_element(By.ID, "onetrust-accept-btn-handler")
            )
            assert driver.execute_script(STORY_IMAGE_JS) == 0  # held back until accepted
            accept.click()
            width = WebDriverWait(driver, 60).until(lambda d: d.execute_script(STORY_IMAGE_JS))
            story = driver.find_element(By.ID, "story").text
    finally:
        service.stop()
    assert width == 8  # the archived image, decoded
    assert story == "Story onetrust"
