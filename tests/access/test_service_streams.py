"""Adaptive streams of real video crawled with ``--render html`` in one job, indexed by the
chain and replayed through our access service (pywb started by our code) in headless Chromium,
the live site stopped: an HLS stream (tests/support/hlssite.py: a master playlist, a low and a
high rendition of fMP4 segments, played by Chromium itself) and a DASH stream
(tests/support/dashsite.py: an MPD of a low and a high representation, played by the page's
MediaSource player, as dash.js does). Each replayed ``<video>`` gets the stream's duration from
the archived manifests and plays past its first segment, every manifest and segment read from
the archive (pywb's replay: nothing of the site is left to fetch)."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait
from warcio.archiveiterator import ArchiveIterator

from access import missing
from access.config import AccessConfig
from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing import chain
from tests.support import dashsite, hlssite
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


def _played(driver: WebDriver, url: str) -> list[float | int]:
    """The page at ``url`` replayed, its film played: duration, readiness, position, error."""
    driver.get(url)
    WebDriverWait(driver, 120).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "iframe#replay_iframe")
    )
    driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, "iframe#replay_iframe"))
    WebDriverWait(driver, 120).until(lambda d: d.find_elements(By.ID, "film"))
    played = driver.execute_async_script(PLAY_JS)
    driver.switch_to.default_content()
    return [*played, driver.title]


def test_hls_and_dash_streams_replay_and_play_from_the_archive(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    hid, job_id, job_dir = make_db_job(db_engine, settings.data_dir)
    film = hlssite.mp4_film()
    crawled, site, routes = dashsite.crawl_streams(job_dir, film, job_id=job_id, harvest_id=hid)
    archived: dict[str, bytes] = {}
    for warc in crawled.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    uri = rec.rec_headers.get_header("WARC-Target-URI")
                    archived[uri] = rec.content_stream().read()
    for path, raw in routes.items():  # both renditions of each stream, whole, once each
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
            played = {
                page: _played(driver, cfg.replay_url(view, "2030", site.url(hlssite.HOST, page)))
                for page in ("/watch.html", "/play.html")
            }
    finally:
        service.stop()
    for page, (duration, ready, position, error, title) in played.items():
        assert error == 0 and "failed" not in title, (page, played[page])
        assert isinstance(duration, float | int) and math.isfinite(duration), (page, duration)
        assert 2.5 < duration < 4.0, (page, duration)  # three segments and a part, about 1 s each
        assert position > 1.5 and ready >= 2, (page, played[page])
