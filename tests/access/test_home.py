"""The readers' home page on the real replay service (gateway, pywb, resolver started by our
code), in headless Chromium: the URL box leads to pywb's calendar of a captured URL, to the URL
search of a site typed with ``*``, and says so when nothing is archived; a guided tour shows
its site's thumbnail from the capture's screenshot record (none for a site without one, none
for a URL an access rule blocks); each collection shows its description, capture count and
date range; a phone lays the page out without sideways scrolling; with the browser in French
the labels, the "not archived" answer and the reading room's refusal are in French."""

from __future__ import annotations

import http.client
import io
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from PIL import Image
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait
from warcio.warcwriter import WARCWriter

from access.config import AccessConfig
from access.service import ReplayService
from crawler.warc.records import screenshot_record
from harvestflow import settings as settings_mod
from tests.support.browser import chromium, lent
from tests.support.corpus import Page, chain_job
from tests.support.environment import reset_harvest_db
from tests.support.replay import get, replay_env

pytestmark = pytest.mark.services

SHOWN = "http://tour.test/"  # captured, with a screenshot record
PLAIN = "http://tour.test/plain.html"  # captured, no screenshot
BLOCKED = "http://secret.test/"  # captured with a screenshot, blocked by an access rule
NOWHERE = "nothing.test/never.html"
OUTSIDE = "127.0.0.2"  # loopback, outside the reading room's 127.0.0.1/32


def _png(color: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(out, format="PNG")
    return out.getvalue()


def _page(url: str, word: str) -> Page:
    body = f"<html><head><title>{word}</title></head><body><h1>{word}</h1></body></html>"
    return Page(url, body.encode(), "text/html", date="2025-05-04T03:02:01Z")


@pytest.fixture(scope="module")
def served(
    services: settings_mod.Settings, tmp_path_factory: pytest.TempPathFactory, replay_venv: Path
) -> Iterator[tuple[AccessConfig, int]]:
    """The service serving one definition's job: three pages, two screenshot records, history
    figures, a description; a tour of three sites; a rule blocking one of them; a reading room
    of 127.0.0.1 (the browser) that refuses 127.0.0.2. One for the file: its tests only read
    what it serves (one indexing and one replay service start, not one per test)."""
    from harvestflow import db

    with pytest.MonkeyPatch.context() as mp:
        replay_env(mp, tmp_path_factory.mktemp("home") / "data")
        mp.setenv("HARVESTFLOW_ACCESS__READING_ROOM", "true")
        mp.setenv("HARVESTFLOW_ACCESS__READING_ROOM_RANGES", '["127.0.0.1/32"]')
        settings_mod.reset()
        reset_harvest_db(services)
        settings = settings_mod.get_settings()
        try:
            yield from _serve(db.get_engine(settings.harvest_db_url), settings)
        finally:
            settings_mod.reset()
            db.dispose_engines()


def _serve(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> Iterator[tuple[AccessConfig, int]]:
    """What :func:`served` serves, made on ``db_engine`` with ``access_settings``."""
    from access import rules, tours
    from harvest.bootstrap import ensure_reference_data
    from harvest.domains import ensure_config

    ensure_reference_data(db_engine)
    data = access_settings.data_dir
    pages = [_page(SHOWN, "shown"), _page(PLAIN, "plain"), _page(BLOCKED, "secret")]
    chain_job(db_engine, data, "Tours 2025", [pages], run=False)
    (warcs,) = data.glob("jobs/*/*/*/warcs")
    job_id, hid = (int(p) for p in warcs.parts[-4:-2][::-1])
    with (warcs / f"{job_id}-{hid}-20261122031500001-00001-crawler.warc.gz").open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, color in ((SHOWN, "red"), (BLOCKED, "blue")):
            writer.write_record(
                screenshot_record(
                    "urn:screenshot:" + url, "2025-05-04T03:02:02Z", _png(color), "<urn:uuid:x>"
                )
            )
    from indexing.chain import run_chain

    run_chain()
    with db_engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE harvestdefinitions SET comments = :c WHERE harvest_id = :h"),
            {"c": "Sites of the 2025 tour de France", "h": hid},
        )
        config = ensure_config(conn, "tour.test").config_id
        for n, (when, objects) in enumerate((("2025-05-04", 40), ("2025-06-30", 2))):
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist) VALUES (:h, :n, 0, 3, 'CIBLEE', 't',"
                    " '{}'::jsonb, '')"
                ),
                {"h": hid, "n": 10 + n},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                    " harvest_id, job_id, harvest_time) SELECT 0, :o, 100, :c, :h, job_id,"
                    " CAST(:t AS timestamptz) FROM jobs WHERE harvest_id = :h AND harvest_num = :n"
                ),
                {"o": objects, "c": config, "h": hid, "t": when + "T12:00:00Z", "n": 10 + n},
            )
    tours.add(db_engine, "tour-2025", "The 2025 tour", "Three sites", user="curator")
    for url in (SHOWN, PLAIN, BLOCKED):
        tours.add_site(db_engine, "tour-2025", url, "20250504", title=f"site {url}")
    rules.add(db_engine, BLOCKED, "block", reason="court order", user="curator")
    service = ReplayService(access_settings)
    service.start()
    try:
        yield AccessConfig.from_settings(access_settings), hid
    finally:
        service.stop()


def _look_up(driver: WebDriver, base: str, typed: str) -> None:
    driver.get(base)
    box = driver.find_element(By.ID, "hf-url")
    box.send_keys(typed)
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.CSS_SELECTOR, "#hf-lookup button").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.TAG_NAME, "html") != old)
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def _thumbs(driver: WebDriver) -> dict[str, int]:
    """Each tour site's thumbnail width as loaded (0: none), by site URL."""
    WebDriverWait(driver, 60).until(
        lambda d: all(d.execute_script("return arguments[0].complete", i)
                      for i in d.find_elements(By.CSS_SELECTOR, "img.thumb"))
    )  # fmt: skip
    return {
        img.find_element(By.XPATH, "./..").get_attribute("href").split("/20250504/", 1)[1]: int(
            driver.execute_script("return arguments[0].naturalWidth", img)
        )
        for img in driver.find_elements(By.CSS_SELECTOR, "img.thumb")
    }


def test_url_box_finds_the_calendar_the_url_search_or_says_nothing_is_archived_in_french_too(
    served, file_chromium: Chrome
) -> None:
    cfg, _hid = served
    base = cfg.url
    with lent(file_chromium, base) as driver:
        _look_up(driver, base, "tour.test/plain.html")  # no scheme: http://
        assert urllib.parse.unquote(driver.current_url) == f"{base}all/*/{PLAIN}"
        # pywb's own calendar page lists the capture's date
        WebDriverWait(driver, 60).until(
            lambda d: "2025" in d.find_element(By.TAG_NAME, "body").text
        )
        _look_up(driver, base, "tour.test/*")
        assert urllib.parse.unquote(driver.current_url) == f"{base}all/*/http://tour.test/*"
        _look_up(driver, base, NOWHERE)
        text = driver.find_element(By.TAG_NAME, "main").text
        assert f"The archive holds no capture of http://{NOWHERE}." in text
        assert driver.find_element(By.ID, "hf-url").get_attribute("value") == NOWHERE
    status, _ = get(f"{base}_lookup?url={urllib.parse.quote(NOWHERE)}")
    assert status == 404
    status, body = get(f"{base}_lookup?url=ftp%3A%2F%2Fx.test%2F")
    assert status == 400 and b"is not a web address" in body
    # a browser in French: the labels, the answers and the reading room's refusal in French
    with chromium(languages="fr-FR,fr") as driver:
        driver.get(cfg.url)
        home = driver.find_element(By.TAG_NAME, "main").text
        lang = driver.find_element(By.TAG_NAME, "html").get_attribute("lang")
        _look_up(driver, cfg.url, NOWHERE)
        answer = driver.find_element(By.TAG_NAME, "main").text
    assert lang == "fr"
    for label in ("Chercher une adresse", "Rechercher dans le texte archivé", "Visites guidées",
                  "Collections", "42 captures, du 2025-05-04 au 2025-06-30"):  # fmt: skip
        assert label in home, label
    assert "Look up" not in home
    assert f"L'archive ne contient aucune capture de http://{NOWHERE}." in answer
    assert re.search(r"Absent de l.archive", answer)
    # the reading room's refusal: in the reader's language, in the home page's style
    french, english = _refusal(cfg, "fr-CA,fr;q=0.9"), _refusal(cfg, "en-GB")
    assert "<h1>Consultation restreinte</h1>" in french and "salles de lecture" in french
    assert "<h1>Consultation restricted</h1>" in english
    style = re.compile(r'<meta name="viewport"[^>]*>.*<header><a href="/">', re.S)
    assert style.search(french) and style.search(english)


def test_tours_show_thumbnails_collections_their_figures_and_a_phone_reads_it(
    served, file_chromium: Chrome
) -> None:
    cfg, hid = served
    with lent(file_chromium, cfg.url) as driver:
        driver.get(cfg.url)
        thumbs = _thumbs(driver)
        card = driver.find_element(By.ID, f"coll-harvest-{hid}").text
        whole = driver.find_element(By.ID, "coll-all").text
    # the screenshot record of the capture; none without one, none for a blocked URL
    assert thumbs[SHOWN] == 64 and thumbs[PLAIN] == 0 and thumbs[BLOCKED] == 0
    assert "Tours 2025" in card and "Sites of the 2025 tour de France" in card
    assert "42 captures, from 2025-05-04 to 2025-06-30" in card
    assert "42 captures, from 2025-05-04 to 2025-06-30" in whole and "The whole archive" in whole
    status, png = get(f"{cfg.url}_thumb/all/20250504/{SHOWN}")
    assert status == 200 and Image.open(io.BytesIO(png)).getpixel((0, 0)) == (255, 0, 0)
    assert get(f"{cfg.url}_thumb/all/20250504/{BLOCKED}")[0] == 404
    # a phone: the page is laid out for its width, nothing to scroll sideways
    with chromium(width=390, height=844, phone=True) as driver:
        driver.get(cfg.url)
        inner = driver.execute_script("return window.innerWidth")
        wide = driver.execute_script("return document.documentElement.scrollWidth")
        box = driver.find_element(By.ID, "hf-url").rect
    assert inner == 390  # the page's viewport: laid out for the phone, not a shrunk desktop
    assert wide <= inner
    assert box["x"] >= 0 and box["x"] + box["width"] <= inner and box["width"] >= 200


def _refusal(cfg: AccessConfig, language: str) -> str:
    """The page the reading room answers 127.0.0.2 (outside it) asking for a capture."""
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=30, source_address=(OUTSIDE, 0))
    try:
        headers = {"Host": urllib.parse.urlsplit(cfg.url).netloc, "Accept-Language": language}
        conn.request("GET", f"/all/20250504/{SHOWN}", headers=headers)
        resp = conn.getresponse()
        assert resp.status == 403
        return resp.read().decode()
    finally:
        conn.close()
