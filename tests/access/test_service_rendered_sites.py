"""The rendered-capture fixture sites crawled with ``--render html`` in one job
(tests/support/rendered_sites.py: every text type served compressed), indexed by the chain and
replayed through our access service (pywb started by our code) in headless Chromium, the live
site stopped: what a reader sees of each, after the same clicks a reader makes — the stories a
compressed app script built from its compressed JSON API, the story behind a OneTrust-style
wall (autoconsent's rule accepted it in the crawl), behind a consent wall worded as a plain
button and behind one in a cross-site iframe (the reader meets the wall again: the crawl's
"accept" is not replayed, the reader clicks it and the story comes from the archive), every
item of a "Load more" list, and the ``<picture>`` source a media query chooses at the desktop
and at the phone viewport the crawl rendered."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from access import missing
from access.config import AccessConfig
from access.service import ReplayService
from crawler.rendering.cdp import find_chromium
from crawler.rendering.phone import WIDTH
from harvestflow import settings as settings_mod
from indexing import chain
from tests.support import behavioursite as bs
from tests.support import rendered_sites, scriptsite
from tests.support.browser import chromium, lent
from tests.support.environment import reset_harvest_db
from tests.support.replay import make_db_job, replay_env

pytestmark = [pytest.mark.services, pytest.mark.slow]

# the story behind a consent wall: its text and its image's natural width once loaded (or 0)
STORY_JS = """
const main = document.getElementById('story');
const img = main && main.querySelector('img');
return [main ? main.firstChild.textContent : '', img && img.complete ? img.naturalWidth : 0];
"""
# the OneTrust wall's story image once loaded (its natural width), or 0
STORY_IMAGE_JS = """
const img = document.querySelector('#story img');
return img && img.complete ? img.naturalWidth : 0;
"""
# the "Load more" list: the items' texts, how many images loaded, whether the button is left
LIST_JS = """
const items = [...document.querySelectorAll('#list li')];
return [items.map(li => li.textContent), items.filter(li => {
  const img = li.querySelector('img'); return img && img.complete && img.naturalWidth > 0;
}).length, !!document.getElementById('more')];
"""
# the news app's stories: titles, how many thumbnails loaded
STORIES_JS = """
const items = [...document.querySelectorAll('#stories li')];
return [items.map(li => li.querySelector('a').textContent).sort(), items.filter(li => {
  const img = li.querySelector('img'); return img.complete && img.naturalWidth > 0;
}).length];
"""
# the picture's chosen source (its replay URL) and natural width once loaded (or 0)
PICTURE_JS = """
const img = document.querySelector('#pic img');
return img && img.complete && img.naturalWidth ? [img.currentSrc, img.naturalWidth] : null;
"""


@dataclass
class Replayed:
    """The access service serving the job's collection: each site's seed, replayable."""

    cfg: AccessConfig
    view: str
    seeds: dict[str, str]

    def open(self, driver: WebDriver, site: str) -> None:
        """The site's seed replayed in ``driver``, inside pywb's replay frame."""
        driver.get(self.cfg.replay_url(self.view, "2030", self.seeds[site]))
        WebDriverWait(driver, 120).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "iframe#replay_iframe")
        )
        driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, "iframe#replay_iframe"))


@pytest.fixture(scope="module")
def replayed(
    services: settings_mod.Settings, tmp_path_factory: pytest.TempPathFactory, replay_venv: Path
) -> Iterator[Replayed]:
    """One crawl of every site (the server stopped after it), one indexing, one service."""
    from harvestflow import db

    find_chromium()
    data = tmp_path_factory.mktemp("rendered-sites") / "data"
    with pytest.MonkeyPatch.context() as mp:
        replay_env(mp, data)
        settings_mod.reset()
        settings = settings_mod.get_settings()
        reset_harvest_db(services)
        engine = db.get_engine(settings.harvest_db_url)
        hid, job_id, job_dir = make_db_job(engine, settings.data_dir)
        result, seeds = rendered_sites.crawl(job_dir, job_id, hid)
        for name in ("mot", "cadre"):  # the crawl accepted both walls by their wording
            assert "consent:accept:wording" in result.line_for(seeds[name])[11].split(",")
        # and the OneTrust wall by autoconsent's rule: its story image (loaded only after
        # "accept") is in the WARC
        assert "consent:accept:Onetrust" in result.line_for(seeds["onetrust"])[11].split(",")
        captured = result.response_uris()
        prefix = seeds["onetrust"].removesuffix("/onetrust.html")
        assert prefix + bs.story_image("onetrust") in captured
        run = chain.run_chain(settings)
        assert run["done"] == run["processed"] >= 1 and not run["quarantined"], run
        service = ReplayService(settings)
        service.start()
        try:
            yield Replayed(
                AccessConfig.from_settings(settings), missing.job_collection(job_id), seeds
            )
        finally:
            service.stop()
            settings_mod.reset()
            db.dispose_engines()


def test_the_compressed_apps_stories_replay_from_its_compressed_script_and_api(
    replayed: Replayed, file_chromium: Chrome
) -> None:
    with lent(file_chromium, replayed.cfg.url) as driver:
        replayed.open(driver, "news")
        WebDriverWait(driver, 60).until(lambda d: len(d.execute_script(STORIES_JS)[0]) >= 3)
        # the reader scrolls to the end: the app asks its API's second page
        driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        WebDriverWait(driver, 60).until(lambda d: d.execute_script(STORIES_JS)[1] == 5)
        titles, thumbs = driver.execute_script(STORIES_JS)
    assert titles == sorted(["Story 1", "Story 2", "Story 3", "Story 4", "Late story"])
    assert thumbs == len(scriptsite.STORIES)


def test_a_consent_walled_page_replays_its_story_after_the_readers_accept(
    replayed: Replayed, file_chromium: Chrome
) -> None:
    """The reader meets the same OneTrust dialog, makes the same click ("accept"), and the
    story with its image appears from the archive."""
    with lent(file_chromium, replayed.cfg.url) as driver:
        replayed.open(driver, "onetrust")
        accept = WebDriverWait(driver, 120).until(
            lambda d: d.find_element(By.ID, "onetrust-accept-btn-handler")
        )
        assert driver.execute_script(STORY_IMAGE_JS) == 0  # held back until accepted
        accept.click()
        width = WebDriverWait(driver, 60).until(lambda d: d.execute_script(STORY_IMAGE_JS))
        story = driver.find_element(By.ID, "story").text
    assert width == 8  # the archived image, decoded
    assert story == "Story onetrust"


def _wall_story(driver: WebDriver) -> list[str | int]:
    """The story once its image has loaded (waited for)."""
    WebDriverWait(driver, 60).until(lambda d: d.execute_script(STORY_JS)[1])
    story: list[str | int] = driver.execute_script(STORY_JS)
    return story


def test_a_worded_consent_walls_story_replays_after_the_readers_accept(
    replayed: Replayed, file_chromium: Chrome
) -> None:
    with lent(file_chromium, replayed.cfg.url) as driver:
        replayed.open(driver, "mot")
        accept = WebDriverWait(driver, 120).until(
            lambda d: d.find_element(By.CSS_SELECTOR, "[data-wall] button.b1")
        )
        assert accept.text == "Tout accepter"
        assert driver.execute_script(STORY_JS)[1] == 0  # held back until accepted
        accept.click()
        story = _wall_story(driver)
    assert story == ["Story mot", 8]  # the archived JSON's title, its image decoded


def test_a_consent_dialog_in_a_cross_site_iframe_replays_the_story_after_the_readers_accept(
    replayed: Replayed, file_chromium: Chrome
) -> None:
    with lent(file_chromium, replayed.cfg.url) as driver:
        replayed.open(driver, "cadre")
        dialog = WebDriverWait(driver, 120).until(
            lambda d: d.find_element(By.CSS_SELECTOR, "iframe[data-wall]")
        )
        assert driver.execute_script(STORY_JS)[1] == 0
        driver.switch_to.frame(dialog)  # the dialog, replayed from the consent platform's host
        accept = WebDriverWait(driver, 60).until(lambda d: d.find_element(By.ID, "ja"))
        assert accept.text == "Alle akzeptieren"
        accept.click()
        driver.switch_to.parent_frame()
        story = _wall_story(driver)
        walls = driver.find_elements(By.CSS_SELECTOR, "[data-wall]")
    assert story == ["Story cadre", 8]
    assert walls == []  # the page took the dialog's answer (postMessage) and removed it


def test_every_load_more_item_is_reachable_in_replay(
    replayed: Replayed, file_chromium: Chrome
) -> None:
    with lent(file_chromium, replayed.cfg.url) as driver:
        replayed.open(driver, "more")
        clicks = 0
        for shown in range(3, 3 * bs.PAGES, 3):  # the reader clicks until the button goes
            WebDriverWait(driver, 60).until(
                lambda d, n=shown: len(d.execute_script(LIST_JS)[0]) >= n
            )
            buttons = driver.find_elements(By.ID, "more")
            if not buttons:
                break
            buttons[0].click()
            clicks += 1
        WebDriverWait(driver, 60).until(lambda d: not d.execute_script(LIST_JS)[2])
        total = 3 * bs.PAGES
        WebDriverWait(driver, 60).until(lambda d: d.execute_script(LIST_JS)[1] == total - 3)
        items, images, button_left = driver.execute_script(LIST_JS)
    assert clicks == bs.PAGES - 1
    assert items == [f"Item {i}" for i in range(1, total + 1)]
    assert images == total - 3  # every loaded item's image (the first page's items have none)
    assert not button_left


@pytest.mark.parametrize(
    ("viewport", "source"), [("desktop", "/img/pic-desk.png"), ("phone", "/img/pic-phone.png")]
)
def test_the_media_query_picture_replays_at_the_viewport_it_was_captured_at(
    replayed: Replayed, file_chromium: Chrome, viewport: str, source: str
) -> None:
    # the phone's screen is a browser of its own (Chrome's mobile emulation is set at its start)
    with (
        chromium(width=WIDTH, phone=True)
        if viewport == "phone"
        else lent(file_chromium, replayed.cfg.url)
    ) as driver:
        replayed.open(driver, "phone")
        shown = WebDriverWait(driver, 60).until(lambda d: d.execute_script(PICTURE_JS))
    assert shown[0].endswith(replayed.seeds["phone"].rstrip("/") + source), shown
    assert shown[1] == 6  # the archived image of that layout, decoded
