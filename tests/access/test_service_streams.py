"""An HLS stream of real video (tests/support/hlssite.py: a master playlist, a low and a high
rendition of fMP4 segments) crawled with ``--render html``, indexed by the chain and replayed
through our access service (pywb started by our code) in headless Chromium, the live site
stopped: the replayed ``<video>`` gets the stream's duration from the archived playlists and
plays past its first segment, every playlist and segment read from the archive."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from warcio.archiveiterator import ArchiveIterator

from access import missing
from access.config import AccessConfig
from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing import chain
from tests.support import hlssite
from tests.support.browser import chromium
from tests.support.replay import make_db_job

pytestmark = [pytest.mark.services, pytest.mark.slow]

# in the replayed page: the film played muted until it is past 1.5 s (its second segment) or
# fails, polled for up to 60 s; its duration, readiness, position and error
PLAY_JS = """
const done = arguments[arguments.length - 1];
const v = document.getElementById('film');
v.muted = true;
v.play().catch(() => {});
const until = Date.now() + 60000;
(function poll() {
  if (v.currentTime > 1.5 || v.error || Date.now() > until) {
    done([v.duration, v.readyState, v.currentTime, v.error ? v.error.code : 0]);
  } else {
    setTimeout(poll, 200);
  }
})();
"""


def test_an_hls_stream_replays_and_plays_from_the_archive(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    hid, job_id, job_dir = make_db_job(db_engine, settings.data_dir)
    film = hlssite.mp4_film()
    crawled, site, routes = hlssite.crawl(job_dir, film, job_id=job_id, harvest_id=hid)
    seed = site.url(hlssite.HOST, "/watch.html")
    archived: dict[str, bytes] = {}
    for warc in crawled.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    uri = rec.rec_headers.get_header("WARC-Target-URI")
                    archived[uri] = rec.content_stream().read()
    for path, raw in routes.items():  # both renditions, whole, once each
        if path != "/robots.txt":
            assert archived.get(site.url(hlssite.HOST, path)) == raw.body, path
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
            duration, ready, position, error = driver.execute_async_script(PLAY_JS)
    finally:
        service.stop()
    assert error == 0, (duration, ready, position, error)
    assert isinstance(duration, float | int) and math.isfinite(duration), duration
    assert 2.5 < duration < 4.0, duration  # three segments of about a second
    assert position > 1.5 and ready >= 2, (duration, ready, position)
