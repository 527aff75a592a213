"""Headless Chromium for the browser tests and the screenshot script; one per test file
(``file_chromium``, registered by tests/conftest.py), lent to each test as a fresh one (``lent``).

Why these flags: the test machines have no network and no display, and Chromium must not try
to reach Google (sync, component updates, QUIC) or reuse a profile; each driver gets a new
empty profile directory that is removed with it; nor start the window's WebUI popups. Its one
window is a kiosk's, on a screen of the window's size: without a tab strip, nothing paints the
tab's loading throbber, which a headless browser draws unseen at 30 frames a second for as
long as a page loads (the browser process paints it, the GPU process composites it: ~0.19
CPU-s per second of loading, ~70 % of a slow navigation's Chromium CPU; a Chromium trace names
it, ``TabIcon::PaintLoadingAnimation``). Pages get the whole window (no toolbar) and see
``display-mode: fullscreen``; a test that needs another viewport emulates it (``phone``).

Selenium is imported where a browser is made, not at the top: this module is a plugin of every
pytest process (tests/conftest.py), and importing Selenium (with trio, which it brings) costs
~0.7 CPU-s in each, most of which drive no browser (xdist workers, the pytest runs of
tests/platform/test_no_hidden_skips.py).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from crawler.rendering.cdp import HEADLESS_UNUSED_FEATURES

if TYPE_CHECKING:
    from selenium import webdriver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # the window's omnibox popups, preloaded in two renderer processes a headless browser never
    # shows: ~3 CPU-s of each start (crawler/rendering/cdp.py)
    f"--disable-features={','.join(HEADLESS_UNUSED_FEATURES)}",
    "--kiosk",  # no tab strip: no loading throbber painted unseen (above)
]


@contextmanager
def chromium(
    width: int = 1280,
    height: int = 900,
    capabilities: dict[str, Any] | None = None,
    languages: str | None = None,
    phone: bool = False,
) -> Iterator[webdriver.Chrome]:
    """A headless Chromium driver with a fresh profile, quit and cleaned up on exit
    (``capabilities``: more, e.g. ``goog:loggingPrefs`` for the DevTools network log;
    ``languages``: the browser's languages, its ``Accept-Language``, e.g. ``"fr-FR,fr"``;
    ``phone``: a phone's screen (``width`` CSS pixels wide) that honours a page's viewport)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="hf-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for name, value in (capabilities or {}).items():
        options.set_capability(name, value)
    screen = f"{width},{height}"  # the kiosk's window fills the screen: the size asked for
    for flag in [*FLAGS, f"--user-data-dir={profile}", f"--ozone-override-screen-size={screen}"]:
        options.add_argument(flag)
    if languages:
        options.add_argument(f"--lang={languages.split(',')[0]}")
        options.add_experimental_option("prefs", {"intl.accept_languages": languages})
    if phone:
        metrics = {"width": width, "height": height, "pixelRatio": 2.0, "mobile": True}
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": metrics})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def file_chromium() -> Iterator[webdriver.Chrome]:
    """One default :func:`chromium` for the tests of a file, each borrowing it with
    :func:`lent` (a test that proves something of a browser's start keeps its own)."""
    with chromium() as driver:
        yield driver


def airflow_login(driver: webdriver.Chrome, base: str, user: str, password: str) -> None:
    """Sign in through Airflow's own login page (simple auth manager); sets the _token cookie."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{base}/auth/login")
    wait = WebDriverWait(driver, 60)
    name = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "input[name=username]")))
    name.send_keys(user)
    driver.find_element(By.CSS_SELECTOR, "input[name=password]").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(lambda d: d.get_cookie("_token") is not None)


@contextmanager
def lent(driver: webdriver.Chrome, *origins: str) -> Iterator[webdriver.Chrome]:
    """``driver`` (a file's one browser: its start costs ~3.5 CPU-s on the CI machine) lent to
    one test as a fresh browser would be: in a new tab with every other tab closed, its
    timeouts as :func:`chromium` sets them, no cookies, no HTTP cache, and nothing stored by
    ``origins`` (local and session storage, IndexedDB, service workers, cache storage) or by
    the origins its tabs were left on. Cleared before the test and again after it, so that a
    test that fails half-way hands nothing on either."""
    _clear(driver, origins)
    try:
        yield driver
    finally:
        _clear(driver, origins)


def _clear(driver: webdriver.Chrome, origins: tuple[str, ...]) -> None:
    """The state a fresh profile starts without, gone from ``driver``; one blank tab left."""
    seen = set(origins)
    for handle in driver.window_handles:
        driver.switch_to.window(handle)
        seen.add(driver.current_url)
    driver.switch_to.new_window("tab")
    fresh = driver.current_window_handle
    for handle in driver.window_handles:
        if handle != fresh:
            driver.switch_to.window(handle)
            driver.close()
    driver.switch_to.window(fresh)
    for url in seen:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc:
            origin = f"{parts.scheme}://{parts.netloc}"
            driver.execute_cdp_cmd(
                "Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"}
            )
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(30)  # WebDriver's default
    driver.implicitly_wait(0)
    left = driver.execute_cdp_cmd("Storage.getCookies", {})["cookies"]
    assert not left, left
