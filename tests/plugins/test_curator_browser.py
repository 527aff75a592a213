"""The curator views in a real browser, inside a real Airflow: `harvestflow up` on the demo's
data dir (the session's shared `demo_platform`), sign-in through Airflow's login page, then
every page shows the demo job and domain, charts render, a crawl.log search finds the lines
the demo crawl is known to log, and requests without Airflow's login are refused."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from tests.demo_fixture import DemoPlatform
from tests.platform.helpers import HARVESTFLOW
from tests.platform.test_up import Output
from tests.plugins.browser import airflow_login, chromium

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


@dataclass
class Airflow:
    base: str
    user: str
    password: str


@pytest.fixture(scope="module")
def airflow_up(demo_platform: DemoPlatform) -> Iterator[Airflow]:
    demo_platform.check()
    proc = subprocess.Popen(
        [HARVESTFLOW, "up"],
        env=demo_platform.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    out = Output(proc)
    try:
        login = out.wait_for(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", 300)
        yield Airflow(login.group(1).rstrip("/"), login.group(2), login.group(3))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(180)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise


def _main(driver: WebDriver) -> str:
    return driver.find_element(By.TAG_NAME, "main").text


def _charts_render(driver: WebDriver) -> int:
    """Number of chart images on the page; fails if one of them did not decode."""
    images = driver.find_elements(By.CSS_SELECTOR, "img.chart")
    for img in images:
        width = driver.execute_script(
            "return arguments[0].complete && arguments[0].naturalWidth", img
        )
        assert width and width > 0, img.get_attribute("src")
    return len(images)


def _search(driver: WebDriver, url: str, **fields: str) -> list[list[str]]:
    driver.get(url)
    form = driver.find_element(By.CSS_SELECTOR, "form.filters")
    for name, value in fields.items():
        box = form.find_element(By.NAME, name)
        box.clear()
        box.send_keys(value)
    form.find_element(By.TAG_NAME, "button").click()
    # the click returns before the result page has replaced this one: reading at once could
    # read the old page (it failed so in CI under load)
    WebDriverWait(driver, 60).until(expected_conditions.staleness_of(form))
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )
    rows = driver.find_elements(By.CSS_SELECTOR, "#search-results tbody tr")
    return [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def test_curator_pages_in_airflow(airflow_up: Airflow) -> None:
    base, cur = airflow_up.base, airflow_up.base + "/curator"

    # without Airflow's login: refused (401), a browser is sent to the login page (307)
    for path in ("/", "/jobs/1", "/domains/example-a.test/size.png", "/static/curator.css"):
        assert httpx.get(cur + path, timeout=30).status_code == 401, path
    html = httpx.get(cur + "/jobs", headers={"Accept": "text/html"}, timeout=30)
    assert html.status_code == 307 and "/auth/login" in html.headers["location"]

    with chromium() as driver:
        airflow_login(driver, base, airflow_up.user, airflow_up.password)

        # the plugin's page in Airflow's own UI embeds the curator app
        driver.get(base + "/plugin/harvest-curator")
        driver.implicitly_wait(30)
        frame = driver.find_element(By.TAG_NAME, "iframe")
        assert frame.get_attribute("src").rstrip("/").endswith("/curator")
        driver.implicitly_wait(0)

        driver.get(cur + "/definitions")
        assert "demo-daily" in _main(driver)

        driver.get(cur + "/jobs")
        assert "demo-daily" in _main(driver)
        job_links = driver.find_elements(By.CSS_SELECTOR, "main a[href*='/curator/jobs/']")
        job_url = next(
            a.get_attribute("href")
            for a in job_links
            if re.search(r"/jobs/\d+$", a.get_attribute("href"))
        )

        driver.get(job_url)
        text = _main(driver)
        assert "demo-daily" in text and "complete" in text
        assert "seeds-report" in text or "seeds report" in text.lower()
        assert _charts_render(driver) == 1  # progress over the crawl

        # the job links to its crawl task instance in Airflow's UI; that task instance exists
        link = driver.find_element(By.LINK_TEXT, "crawl task of this job").get_attribute("href")
        task = re.search(r"/dags/([^/]+)/runs/([^/]+)/tasks/([^/]+)(?:/mapped/(\d+))?$", link)
        assert task, link
        api = f"{base}/api/v2/dags/{task[1]}/dagRuns/{task[2]}/taskInstances/{task[3]}"
        api += f"/{task[4]}" if task[4] else ""
        token = {"Authorization": "Bearer " + driver.get_cookie("_token")["value"]}
        assert httpx.get(api, headers=token, timeout=30).json()["state"] == "success"

        # crawl.log search: the demo site has exactly two redirect pages on example-a
        rows = _search(driver, job_url, q=r"example-a\.test:\d+/redirect-30[12]")
        assert sorted(r[1] for r in rows) == ["301", "302"], rows
        rows = _search(driver, job_url, q="example-a", status="404")
        assert [r[3].rsplit("/", 1)[1] for r in rows] == ["missing.html"], rows
        _search(driver, job_url, q="(unclosed")
        assert "invalid regular expression" in _main(driver)

        driver.get(cur + "/domains/example-a.test")
        text = _main(driver)
        assert "example-a.test" in text and "demo-daily" in text
        assert _charts_render(driver) == 1  # size over time

        driver.get(cur + "/qa")
        day_url = driver.find_element(By.CSS_SELECTOR, "main a[href*='/curator/qa/']")
        driver.get(day_url.get_attribute("href"))
        assert _charts_render(driver) >= 1

        driver.get(cur + "/preload")
        assert "demo-preload" in _main(driver)
        driver.get(cur + "/preservation")
        assert "ark:/" in _main(driver)
