"""A page whose stories come from a POST JSON API, with an audio clip and a video the browser
fetches by byte range (tests/crawler/postmediasite.py, served as nginx serves it), crawled with
``--render html``, indexed by the chain and replayed through our access service (pywb started by
our code) in headless Chromium, the live site stopped: the replayed page's script posts the same
bodies and gets the archived answers (pywb looks a POST up under its body, the key the index
holds), so every story and both counts are shown; both media elements load their metadata from
the one full capture of each file and have a duration."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from access import missing
from access.config import AccessConfig
from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing import chain
from tests.support import postmediasite
from tests.support.browser import chromium
from tests.support.replay import make_db_job

pytestmark = [pytest.mark.services, pytest.mark.slow]

# in the replayed page: every media element's id, duration and readiness once each has its
# metadata (or its error code), polled for up to 60 s
MEDIA_JS = """
const done = arguments[arguments.length - 1];
const media = [...document.querySelectorAll('audio, video')];
const until = Date.now() + 60000;
(function poll() {
  if (media.every(m => m.readyState >= 1 || m.error) || Date.now() > until) {
    done(media.map(m => [m.id, m.duration, m.readyState, m.error ? m.error.code : 0]));
  } else {
    setTimeout(poll, 200);
  }
})();
"""


def test_a_post_built_page_replays_with_its_stories_and_its_ranged_media(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    hid, job_id, job_dir = make_db_job(db_engine, settings.data_dir)
    film = postmediasite.webm_film()
    crawled, site = postmediasite.crawl(job_dir, film, job_id=job_id, harvest_id=hid)
    seed = site.url("/")
    assert {f[3]: f[1] for f in crawled.log_fields()}[seed] == "200"
    run = chain.run_chain(settings)
    assert run["done"] == run["processed"] >= 1 and not run["quarantined"], run
    view = missing.job_collection(job_id)

    service = ReplayService(settings)
    service.start()
    try:
        with chromium() as driver:
            driver.set_script_timeout(90)
            driver.get(cfg.replay_url(view, "2030", seed))
            WebDriverWait(driver, 120).until(
                lambda d: d.find_elements(By.CSS_SELECTOR, "iframe#replay_iframe")
            )
            driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, "iframe#replay_iframe"))
            WebDriverWait(driver, 120).until(lambda d: d.find_elements(By.ID, "film"))
            try:
                shown = WebDriverWait(driver, 60).until(
                    lambda d: (
                        len(d.find_elements(By.CSS_SELECTOR, "li.story")) == 6
                        and all(
                            d.find_element(By.ID, f"count-{section}").text == answer
                            for section, answer in postmediasite.COUNTS.items()
                        )
                        and [e.text for e in d.find_elements(By.CSS_SELECTOR, "li.story a")]
                    )
                )
            except Exception:
                stories = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "li.story")]
                counts = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "p[id^=count]")]
                raise AssertionError(f"replayed stories {stories}, counts {counts}") from None
            assert sorted(shown) == sorted(postmediasite.STORIES.values())
            media = driver.execute_async_script(MEDIA_JS)
    finally:
        service.stop()
    by_id = {m[0]: m[1:] for m in media}
    assert set(by_id) == {"clip", "film"}, media
    for name, (duration, ready, error) in by_id.items():
        assert error == 0 and ready >= 1, (name, media)
        assert isinstance(duration, float | int) and math.isfinite(duration), (name, media)
        assert duration > 0.5, (name, media)
