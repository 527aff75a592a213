"""The curator views in a real browser, inside a real Airflow: `harvestflow up` on the demo's
data dir (the session's shared `demo_platform`), sign-in through Airflow's login page, then
every page shows the demo job and domain with their figures, charts render, a crawl.log search
finds the lines the demo crawl is known to log, a job's "task log" link, clicked inside
Airflow's UI, opens the log of the very crawl, and requests without Airflow's login are
refused."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.browser import airflow_login, lent
from tests.support.demo_fixture import DemoPlatform
from tests.support.platform_cli import HARVESTFLOW, _wait_run, api_client, start_up, unpause
from tests.support.platform_up import Platform, sign_in

# a page that reloads under a wait makes the element just read stale: read it again
STALE = (StaleElementReferenceException,)

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


@dataclass
class Airflow:
    base: str
    user: str
    password: str
    harvest_id: int  # the demo definition


# the one DAG these tests run; the others stay paused (the demo made them so: demo_fixture),
# so that no schedule's first run takes the CPU while the test's own run waits for it
DAGS_RUN = {"selective_harvest_daily"}


@pytest.fixture(scope="module")
def airflow_up(demo_platform: DemoPlatform) -> Iterator[Airflow]:
    demo_platform.check()
    proc, out = start_up(demo_platform.env)
    try:
        harvest_id = int(out.wait_for(r"demo definition id (\d+)", 300).group(1))
        login = out.wait_for(r"Airflow UI: (http://\S+)\s+login: (\S+) / (\S+)", 300)
        with api_client(out) as client:
            unpause(client, DAGS_RUN)
        yield Airflow(login.group(1).rstrip("/"), login.group(2), login.group(3), harvest_id)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(180)
        except subprocess.TimeoutExpired:
            proc.kill()
            # seen under heavy load (8–10 and more on 2 cores): say how far the stop got
            raise AssertionError(
                "`harvestflow up` not stopped 180 s after Ctrl-C; its output:\n"
                + "".join(out.lines)[-4000:]
            ) from None


def _signed_in(driver: WebDriver, af: Airflow) -> None:
    """The demo's admin signed in by the token Airflow's auth manager issues, as the login page
    would set it (that page itself: ``test_curator_pages_in_airflow``): the tests after it are
    about what a signed-in curator sees, and the page, with Airflow's UI it then loads, cost
    the browser and the api-server seconds of CPU each time."""
    sign_in(driver, Platform(af.base, {}, {af.user: af.password}, site=0), af.user)


def _main(driver: WebDriver) -> str:
    return driver.find_element(By.TAG_NAME, "main").text


def _row(driver: WebDriver, pattern: str) -> str:
    """Text of the first table row of the page matching the regular expression ``pattern``."""
    for row in driver.find_elements(By.CSS_SELECTOR, "main tbody tr"):
        if re.search(pattern, row.text):
            return row.text
    raise AssertionError(f"no row matching {pattern!r} in:\n{_main(driver)}")


def _table(driver: WebDriver, heading: str) -> WebElement:
    """The table right after the <h3> report heading ``heading``."""
    return driver.find_element(By.XPATH, f"//h3[text()='{heading}']/following-sibling::table[1]")


def _charts_render(driver: WebDriver) -> int:
    """Number of chart images on the page; fails if one of them did not decode."""
    images = driver.find_elements(By.CSS_SELECTOR, "img.chart")
    for img in images:
        width = driver.execute_script(
            "return arguments[0].complete && arguments[0].naturalWidth", img
        )
        assert width and width > 0, img.get_attribute("src")
    return len(images)


def _submit(driver: WebDriver, form: WebElement) -> None:
    """Submit ``form`` and wait for the answer page to replace this one."""
    form.find_element(By.TAG_NAME, "button").click()
    # the click returns before the result page has replaced this one: reading at once could
    # read the old page (it failed so in CI under load)
    WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
        expected_conditions.staleness_of(form)
    )
    WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def _search(driver: WebDriver, url: str, **fields: str) -> list[list[str]]:
    driver.get(url)
    form = driver.find_element(By.CSS_SELECTOR, "form.filters[method=get]")  # not the QA form
    for name, value in fields.items():
        box = form.find_element(By.NAME, name)
        box.clear()
        box.send_keys(value)
    _submit(driver, form)
    rows = driver.find_elements(By.CSS_SELECTOR, "#search-results tbody tr")
    return [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def _refused_without_login(af: Airflow) -> None:
    cur = af.base + "/curator"
    paths = ["/", "/definitions", "/jobs", "/jobs/1", "/domains/example-a.test/size.png"]
    paths += ["/qa", "/preload", "/preservation", "/static/curator.css", "/static/curator.js"]
    for path in paths:
        assert httpx.get(cur + path, timeout=30).status_code == 401, path
    forged = {"Authorization": "Bearer eyJhbGciOiJIUzUxMiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"}
    refused = httpx.get(cur + "/jobs", headers=forged, timeout=30)
    assert refused.status_code == 403 and "Invalid JWT" in refused.text  # as Airflow's own API
    html = httpx.get(cur + "/jobs", headers={"Accept": "text/html"}, timeout=30)
    assert html.status_code == 307 and "/auth/login" in html.headers["location"]


def _trigger_harvest(af: Airflow) -> tuple[httpx.Client, str]:
    """A run of the demo definition through the scheduler and LocalExecutor (task logs on
    disk, unlike the demo's in-process dag.test()); returns the API client and the run id."""
    token = httpx.post(
        f"{af.base}/auth/token", json={"username": af.user, "password": af.password}, timeout=30
    )
    assert token.status_code == 201, token.text
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    api = httpx.Client(base_url=af.base, headers=headers, timeout=30)
    deadline = time.monotonic() + 180
    while api.get("/api/v2/dags/selective_harvest_daily").status_code != 200:
        assert time.monotonic() < deadline, "selective_harvest_daily never parsed"
        time.sleep(3)
    run = api.post(
        "/api/v2/dags/selective_harvest_daily/dagRuns",
        json={"logical_date": None, "conf": {"harvest_id": af.harvest_id}},
    )
    assert run.status_code == 200, run.text
    return api, run.json()["dag_run_id"]


@pytest.fixture(scope="module")
def harvest_run(airflow_up: Airflow) -> Iterator[tuple[httpx.Client, str]]:
    """The run of the demo definition that ``test_curator_pages_in_airflow`` opens the task
    log of, triggered as soon as the platform is up: it runs while the browser starts and the
    pages are checked, instead of being waited for after them."""
    api, run_id = _trigger_harvest(airflow_up)
    try:
        yield api, run_id
    finally:
        api.close()


def test_curator_pages_in_airflow(
    airflow_up: Airflow, harvest_run: tuple[httpx.Client, str], file_chromium: Chrome
) -> None:
    af = airflow_up
    base, cur = af.base, af.base + "/curator"
    _refused_without_login(af)
    api, run_id = harvest_run

    with lent(file_chromium, af.base) as driver:
        # a browser without a session is sent to Airflow's login page, then signs in there
        driver.get(cur + "/jobs")
        WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
            lambda d: "/auth/login" in d.current_url
        )
        airflow_login(driver, base, af.user, af.password)

        driver.get(cur + "/definitions")
        # type, schedule, next date, channel, configurations, runs, last runs (done/jobs)
        row = _row(
            driver, r"^\d+ demo-daily \(jobs\) partial yes daily every 1 day\(s\) \d{4}-\d\d-\d\d "
        )
        assert re.search(r"\d\d:\d\d:\d\d [A-Z]+ 2 \d+ .*#\d+: 1/1", row), row

        # the demo's job is the first one (the list is newest first; more may run meanwhile)
        driver.get(cur + "/jobs")
        job_links = [
            a.get_attribute("href")
            for a in driver.find_elements(By.CSS_SELECTOR, "main a[href*='/curator/jobs/']")
            if re.search(r"/jobs/\d+$", a.get_attribute("href"))
        ]
        job_url = min(job_links, key=lambda u: int(u.rsplit("/", 1)[1]))
        job_id = job_url.rsplit("/", 1)[1]
        # status, channel, URLs, bytes, stop reasons, the task log link
        row = _row(driver, rf"^{job_id} demo-daily 1 DONE [A-Z]+ ")
        figures = re.search(r" (\d+) ([\d,]+) DOWNLOAD_COMPLETE task log$", row)
        assert figures and int(figures[1]) > 40 and int(figures[2].replace(",", "")) > 5000, row
        # the filter form as it comes ("any" status) and with DONE selected
        for choice in ("any", "DONE"):
            form = driver.find_element(By.CSS_SELECTOR, "form.filters")
            Select(form.find_element(By.NAME, "status")).select_by_visible_text(choice)
            _submit(driver, form)
            _row(driver, rf"^{job_id} demo-daily 1 DONE ")

        driver.get(job_url)
        text = _main(driver)
        assert "demo-daily" in text and "complete" in text
        assert _charts_render(driver) == 1  # progress over the crawl
        # the reports as tables; the seeds report with its redirect column and the two seeds
        seeds = _table(driver, "seeds-report")
        header = [th.text for th in seeds.find_elements(By.TAG_NAME, "th")]
        assert header == ["code", "status", "seed", "redirect"], header
        assert "200 CRAWLED http://www.example-a.test:" in seeds.text
        for report in ("crawl-report", "hosts-report", "mimetype-report", "responsecode-report"):
            assert _table(driver, report).find_elements(By.CSS_SELECTOR, "tbody tr"), report
        # the demo job's crawl task instance exists in Airflow (the demo ran it in process)
        link = driver.find_element(By.LINK_TEXT, "crawl task of this job").get_attribute("href")
        task = re.search(r"/dags/([^/]+)/runs/([^/]+)/tasks/([^/]+)(?:/mapped/(\d+))?$", link)
        assert task, link
        ti = f"/api/v2/dags/{task[1]}/dagRuns/{task[2]}/taskInstances/{task[3]}"
        ti += f"/{task[4]}" if task[4] else ""
        assert api.get(ti).json()["state"] == "success"

        # crawl.log search: the demo site has exactly two redirect pages on example-a
        rows = _search(driver, job_url, q=r"example-a\.test:\d+/redirect-30[12]")
        assert sorted(r[1] for r in rows) == ["301", "302"], rows
        rows = _search(driver, job_url, q="example-a", status="404")
        assert [r[3].rsplit("/", 1)[1] for r in rows] == ["missing.html"], rows
        rows = _search(driver, job_url, mime="image/")
        assert rows and all(r[6].startswith("image/") for r in rows), rows
        _search(driver, job_url, q="(unclosed")
        assert "invalid regular expression" in _main(driver)

        driver.get(cur + "/domains/example-a.test")
        text = _main(driver)
        assert "demo_loopback" in text and "http://www.example-a.test:" in text  # config, seeds
        _row(
            driver, rf" demo-daily {job_id} demo \d+ [\d,]+ DOWNLOAD_COMPLETE view this capture$"
        )  # history, replay link
        assert _charts_render(driver) == 1  # size over time

        driver.get(cur + "/qa")
        day_url = driver.find_element(By.CSS_SELECTOR, "main a[href*='/curator/qa/']")
        driver.get(day_url.get_attribute("href"))
        assert _charts_render(driver) >= 4  # sizes, MIME families, status, top domains…
        assert re.search(r"\burls \d+", _table(driver, "general").text)

        driver.get(cur + "/preload")
        driver.find_element(By.LINK_TEXT, "demo-preload").click()
        text = _main(driver)
        assert "DNS active:" in text and "registry" in text
        assert "example-c.test failed" in text  # the demo's unresolvable domain

        driver.get(cur + "/preservation")
        text = _main(driver)
        assert "empty: nothing waits for a person" in text  # the demo's manual queue
        _row(driver, rf"^{job_id} demo-daily ark:/\S+ preserved ")

        # inside Airflow's UI: the plugin's page embeds the curator views in an iframe; the
        # "task log" link of the job crawled just now opens that crawl's log in Airflow
        assert _wait_run(api, "selective_harvest_daily", run_id, 600) == "success"
        driver.get(base + "/plugin/harvest-curator")
        frame = WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
            expected_conditions.presence_of_element_located((By.TAG_NAME, "iframe"))
        )
        assert frame.get_attribute("src").rstrip("/").endswith("/curator")
        driver.switch_to.frame(frame)
        WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
            lambda d: d.find_elements(By.LINK_TEXT, "Jobs")
        )
        # "view this capture" opens the replay in a new tab, also from inside the frame, which
        # Airflow sandboxes without "allow-popups" (the browser refuses a target=_blank link)
        driver.execute_script("location.href = arguments[0]", cur + "/domains/example-a.test")
        replay = WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
            lambda d: d.find_element(By.LINK_TEXT, "view this capture")
        )
        replay_url = replay.get_attribute("href")
        curator_window = driver.current_window_handle
        replay.click()
        WebDriverWait(driver, 30).until(lambda d: len(d.window_handles) == 2)
        driver.switch_to.window(next(h for h in driver.window_handles if h != curator_window))
        WebDriverWait(driver, 30).until(lambda d: d.current_url != "about:blank")
        assert driver.current_url.split("#")[0] == replay_url, (driver.current_url, replay_url)
        driver.close()
        driver.switch_to.window(curator_window)
        assert driver.current_url.startswith(base + "/plugin/harvest-curator")  # still there
        driver.switch_to.frame(driver.find_element(By.TAG_NAME, "iframe"))
        driver.find_element(By.LINK_TEXT, "Jobs").click()
        ours = WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
            lambda d: d.find_element(By.CSS_SELECTOR, f"a[href*='/runs/{quote(run_id, safe='')}/']")
        )
        new_job = ours.find_element(By.XPATH, "ancestor::tr/td[1]").text
        ours.click()
        driver.switch_to.default_content()
        WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
            lambda d: f"crawl job {new_job}: " in d.find_element(By.TAG_NAME, "body").text
        )
        assert "/dags/selective_harvest_daily/runs/" in driver.current_url
        assert "/tasks/harvest_job.crawl/" in driver.current_url


def test_crawl_control_writes_go_through_airflow_auth(airflow_up: Airflow, demo_platform) -> None:
    """The crawl-control POST behind Airflow's real auth manager: without Airflow's login 401,
    without the CSRF token 403; with both, the write reaches the action's own check (the demo's
    job is DONE: 400 "not running"), so Airflow named the user and let them edit."""
    import hashlib
    import hmac

    af = airflow_up
    cur = af.base + "/curator"
    token = httpx.post(
        f"{af.base}/auth/token", json={"username": af.user, "password": af.password}, timeout=30
    ).json()["access_token"]
    client = httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    job = re.search(r'/curator/jobs/(\d+)"', client.get(cur + "/jobs").text)
    assert job, "no job listed"
    page = client.get(f"{cur}/jobs/{job.group(1)}")
    assert page.status_code == 200
    session = page.cookies.get("hf_csrf")
    assert session, page.headers
    url = f"{cur}/jobs/{job.group(1)}/actions"
    assert httpx.post(url, data={"action": "pause"}, timeout=30).status_code == 401
    # the client sends the session cookie back (as a browser would), not the token
    forged = client.post(url, data={"action": "pause"})
    assert forged.status_code == 403 and "CSRF" in forged.text
    key = (Path(demo_platform.env["HARVESTFLOW_DATA_DIR"]) / "curator" / "csrf.key").read_bytes()
    csrf = hmac.new(key, f"{session}\0{af.user}".encode(), hashlib.sha256).hexdigest()
    done = client.post(url, data={"action": "pause", "csrf_token": csrf})
    assert done.status_code == 400 and "not running" in done.text, done.text


def test_the_reading_room_admits_a_user_signed_in_to_the_curator_pages(
    airflow_up: Airflow, demo_platform: DemoPlatform
) -> None:
    """Reading-room mode: outside the address ranges, Airflow's login (the curator
    pages' own) lets a reader in — as a Bearer token or the UI's ``_token`` cookie —, a forged
    token or none does not. The gateway asks the real curator pages of the running Airflow."""
    import dataclasses
    import ipaddress

    from access.config import AccessConfig
    from access.gateway import Gateway
    from harvestflow.settings import get_settings

    af = airflow_up
    cfg = dataclasses.replace(
        AccessConfig.from_settings(get_settings()),
        reading_room=True,
        reading_room_ranges=(ipaddress.ip_network("127.0.0.1/32"),),
        reading_room_login=True,
        login_check_url=f"{af.base}/curator/",
    )
    gateway = Gateway(cfg, rules=list)
    token = httpx.post(
        f"{af.base}/auth/token", json={"username": af.user, "password": af.password}, timeout=30
    ).json()["access_token"]
    replay = "/all/2030/http://www.example-a.test/"
    assert gateway.refusal("127.0.0.1", replay, {}) is None  # inside the ranges
    assert gateway.refusal("127.0.0.2", "/", {}) is None  # the home page is public
    refused = gateway.refusal("127.0.0.2", replay, {})
    assert refused and "outside the reading room and not signed in" in refused
    assert gateway.refusal("127.0.0.2", replay, {"Authorization": f"Bearer {token}"}) is None
    assert gateway.refusal("127.0.0.2", replay, {"Cookie": f"lang=fr; _token={token}"}) is None
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert gateway.refusal("127.0.0.2", replay, {"Authorization": f"Bearer {forged}"})


def test_search_page_in_airflow(
    airflow_up: Airflow, demo_platform: DemoPlatform, file_chromium: Chrome
) -> None:
    """The full-text search page mounted at /search in Airflow: refused without Airflow's login
    as the curator views are; signed in, "Browse → Archive search" shows it, a search finds the
    demo site's front page (extracted by the demo's indexing chain) and the result links into
    replay at ``[access] url``, to that capture and to the calendar of its URL."""
    from access.config import AccessConfig
    from harvestflow.settings import load

    af = airflow_up
    search = af.base + "/search/"
    for params in ({}, {"q": "bundled loopback"}):
        assert httpx.get(search, params=params, timeout=30).status_code == 401, params
    forged = {"Authorization": "Bearer eyJhbGciOiJIUzUxMiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"}
    refused = httpx.get(search, params={"q": "bundled"}, headers=forged, timeout=30)
    assert refused.status_code == 403 and "Invalid JWT" in refused.text
    html = httpx.get(search, headers={"Accept": "text/html"}, timeout=30)
    assert html.status_code == 307 and "/auth/login" in html.headers["location"]

    replay = AccessConfig.from_settings(load(environ=demo_platform.env)).url
    with lent(file_chromium, af.base) as driver:
        _signed_in(driver, af)
        driver.get(af.base + "/plugin/archive-search")
        frame = WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
            expected_conditions.presence_of_element_located((By.TAG_NAME, "iframe"))
        )
        assert str(frame.get_attribute("src")).rstrip("/").endswith("/search")
        driver.switch_to.frame(frame)
        form = WebDriverWait(driver, 60, ignored_exceptions=STALE).until(
            lambda d: d.find_element(By.TAG_NAME, "form")
        )
        form.find_element(By.NAME, "q").send_keys("bundled loopback")
        _submit(driver, form)
        main = _main(driver)
        assert re.search(r"\b1 result, page 1 of 1\b", main), main
        title = driver.find_element(By.CSS_SELECTOR, ".hit a.title")
        assert title.text == "Example A — front page"
        front = re.escape(replay) + r"all/%s/(http://www\.example-a\.test:\d+/)$"
        href = str(title.get_attribute("href"))
        link = re.match(front % r"\d{14}", href)
        assert link, (href, replay)
        calendar = driver.find_element(By.LINK_TEXT, "all captures of this URL")
        assert calendar.get_attribute("href") == f"{replay}all/*/{link.group(1)}"


def test_qa_comment_in_airflow_reaches_the_domain_and_the_next_transfer(
    airflow_up: Airflow, demo_platform: DemoPlatform, tmp_path: Path, file_chromium: Chrome
) -> None:
    """QA feedback behind Airflow's login: a curator's selection record of the demo's domain
    (imported with the CLI; monthly from 2099, so no run of the session harvests it), a QA
    comment with its status and "add these URLs" written on the demo job's page, shown on the
    domain's page; the next selection transfer puts the URLs into the domain's seeds."""
    import json

    af = airflow_up
    cur = af.base + "/curator"
    missing = ["http://www.example-a.test/qa-missing.html", "http://www.example-a.test/qa/2.html"]
    target = {
        "id": "qa-demo",
        "title": "Example A (QA)",
        "seeds": ["http://www.example-a.test/"],
        "schedules": [{"frequency": "MONTHLY", "startDate": "2099-01-01 00:00:00"}],
        "scope": "root",
        "depth": "CAPPED",
        "collection": "qa-demo",
        "theme": "demo",
    }
    feed = tmp_path / "qa-feed.json"
    feed.write_text(json.dumps([target]))

    def cli(*args: str) -> str:
        done = subprocess.run(
            [HARVESTFLOW, *args], env=demo_platform.env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    cli("selection", "import", str(feed), "--no-url-check")
    with lent(file_chromium, af.base) as driver:
        _signed_in(driver, af)
        driver.get(cur + "/jobs")
        links = [
            str(a.get_attribute("href"))
            for a in driver.find_elements(By.CSS_SELECTOR, "main a[href*='/curator/jobs/']")
            if re.search(r"/jobs/\d+$", str(a.get_attribute("href")))
        ]
        job_url = min(links, key=lambda u: int(u.rsplit("/", 1)[1]))  # the demo's job
        driver.get(job_url)
        wait = WebDriverWait(driver, 120, ignored_exceptions=STALE)
        form = wait.until(lambda d: d.find_element(By.ID, "qa-form"))
        assert "Example A (QA)" in form.text  # the record the directives are for
        Select(form.find_element(By.NAME, "status")).select_by_value("issues")
        form.find_element(By.NAME, "text").send_keys("two pages missing from the capture")
        form.find_element(By.NAME, "add_urls").send_keys("\n".join(missing))
        _submit(driver, form)
        wait.until(lambda d: d.find_element(By.ID, "qa-status").text == "issues")
        comments = driver.find_element(By.ID, "qa-comments").text
        assert "two pages missing" in comments and af.user in comments and "pending" in comments

        driver.get(cur + "/domains/example-a.test")
        shown = wait.until(lambda d: d.find_element(By.ID, "domain-qa").text)
        assert "two pages missing" in shown and "issues" in shown

    result = json.loads(cli("selection", "transfer"))
    assert len(result["directives"]) == 1, result
    seeds = cli("domain", "show", "example-a.test")
    assert all(url in seeds for url in missing), seeds
